// The page a sign-in link opens: it names the account and signs in only when its button posts the
// token back. A GET alone never signs in, so a link a third party makes a browser open (login CSRF),
// or a mail scanner's preview, changes nothing. Plain HTML with no script or inline style, so it
// meets the console's Content-Security-Policy; the console's stylesheet gives it its look.

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (character) => HTML_ESCAPES[character]!);

export function signInConfirmationPage(input: { email: string; token: string; next: string | null; action: string }): string {
  const hidden = (name: string, value: string) => `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`;
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Sign in · Employer console</title>
  <link rel="icon" href="data:,">
  <link rel="stylesheet" href="/console/app.css">
</head>
<body>
  <main id="main">
    <h1>Sign in</h1>
    <p>This link signs this browser in as <strong>${escapeHtml(input.email)}</strong>.</p>
    <p>Continue only if you asked for it: a link someone else sent you would sign you in to their account.</p>
    <form method="post" action="${escapeHtml(input.action)}">
      ${hidden('token', input.token)}${input.next === null ? '' : `\n      ${hidden('next', input.next)}`}
      <button type="submit" autofocus>Sign in as ${escapeHtml(input.email)}</button>
    </form>
  </main>
</body>
</html>
`;
}
