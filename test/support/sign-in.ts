// Signing in through a one-time link as a browser does: the link (GET) shows a confirmation page, and
// its form posts the token back from the page's origin. Tests and benches sign in only through this.

export type SignInOutcome = {
  /** The status of the last response: the form's 303 once signed in, or the refusal of the GET or the POST. */
  status: number;
  /** `ei_session=<secret>`, or null when no session cookie was set. */
  cookie: string | null;
  /** Where the signed-in browser is sent (the validated `next`, or /api/auth/session). */
  next: string | null;
};

/** The confirmation page's form: its action and its fields (hidden inputs), as a browser would submit them. */
export function signInFormOf(html: string): { action: string; fields: URLSearchParams } {
  const unescape = (text: string) => text.replace(/&(amp|lt|gt|quot|#39);/g, (_entity, name: string) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" })[name]!);
  const action = /<form method="post" action="([^"]*)">/.exec(html)?.[1];
  if (action === undefined) throw new Error(`no sign-in form in the page: ${html.slice(0, 200)}`);
  const fields = new URLSearchParams();
  for (const [, name, value] of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) fields.append(name!, unescape(value!));
  return { action: unescape(action), fields };
}

export async function followSignInLink(link: string): Promise<SignInOutcome> {
  const page = await fetch(link, { redirect: 'manual' });
  if (page.status !== 200) {
    await page.arrayBuffer();
    return { status: page.status, cookie: null, next: null };
  }
  const { action, fields } = signInFormOf(await page.text());
  const response = await fetch(action, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: new URL(link).origin },
    body: fields,
    redirect: 'manual',
  });
  await response.arrayBuffer();
  const cookie = response.headers.getSetCookie().find((header) => header.startsWith('ei_session='))?.split(';')[0] ?? null;
  return { status: response.status, cookie, next: response.headers.get('location') };
}

/** The session cookie a sign-in link gives (`ei_session=<secret>`); throws when it gives none. */
export async function sessionCookieOf(link: string): Promise<string> {
  const { status, cookie } = await followSignInLink(link);
  if (status !== 303 || !cookie) throw new Error(`sign-in failed: ${status}${cookie ? '' : ', no session cookie'}`);
  return cookie;
}
