// Debian's Chromium driven by playwright-core, for the console's end-to-end tests. `.ci/run` installs
// the `chromium` package when it is missing; where it cannot be, the tests skip and say why.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { chromium, type Browser, type BrowserContextOptions, type Page } from 'playwright-core';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Why the browser tests cannot run here, or null when they can. */
export function browserUnavailable(): string | null {
  return existsSync(CHROMIUM_PATH) ? null : `no Chromium at ${CHROMIUM_PATH} (install the chromium package, or set CHROMIUM_PATH)`;
}

/** A new browser with a new, empty profile (playwright-core makes one per launch and removes it on close). */
export async function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync',
    ],
  });
}

type AxeViolation = { id: string; impact: string | null; help: string; nodes: Array<{ target: unknown }> };

const axeSource = readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/**
 * The serious and critical accessibility violations axe-core finds in the page as it is. axe is
 * evaluated through the DevTools protocol, which the page's Content-Security-Policy does not govern
 * (the page itself still allows no inline script).
 */
export async function seriousAxeViolations(page: Page): Promise<Array<{ id: string; impact: string | null; help: string; targets: string }>> {
  await page.evaluate(await axeSource);
  const violations = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run: (context: unknown, options: unknown) => Promise<{ violations: AxeViolation[] }> } }).axe;
    return (await axe.run('html', { resultTypes: ['violations'] })).violations;
  });
  return violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => ({ id: violation.id, impact: violation.impact, help: violation.help, targets: JSON.stringify(violation.nodes.map((node) => node.target)) }));
}

/** A page of a new browser context signed in with a session cookie (`ei_session=...`) for `baseUrl`. */
export async function signedInPage(browser: Browser, baseUrl: string, cookie: string, options: BrowserContextOptions = {}): Promise<Page> {
  const context = await browser.newContext(options);
  const [name, value] = cookie.split('=') as [string, string];
  await context.addCookies([{ name, value, url: baseUrl }]);
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  return page;
}
