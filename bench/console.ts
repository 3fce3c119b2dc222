// First load of the admin console in Debian's Chromium: a signed-in administrator opens / in a fresh
// browser context (empty cache) and the API keys page has rendered its table, which takes the HTML,
// the script, the stylesheet and two API calls (session, keys). The page marks `console-ready` when
// rendered; its time from navigation start is the figure. Prints percentiles over the runs, the browser's
// load event time, and the size of the JavaScript as sent and gzipped.
//   npm run bench -- console [runs=10]
import { gzipSync } from 'node:zlib';
import { issueSignInToken } from '../src/identity/commands.ts';
import { createEmployer } from '../src/tenants/commands.ts';
import { browserUnavailable, launchChromium } from '../test/support/browser.ts';
import { percentile, sessionCookieOf, startBenchService } from './support.ts';

export default async function consoleBench(args: string[]) {
  const runs = Number(args[0] ?? 10);
  const unavailable = browserUnavailable();
  if (unavailable) {
    console.log(`console bench skipped: ${unavailable}`);
    return;
  }
  const service = await startBenchService();
  const browser = await launchChromium();
  try {
    const system = { tenantId: null, actor: { type: 'system' as const, id: 'bench' } };
    const { employerId, adminUserId } = await createEmployer(service.ctx, system, { name: 'Bench Co', adminEmail: `bench-${Date.now()}@example.test` });
    const { signInUrl } = await issueSignInToken(service.ctx, { ...system, tenantId: employerId }, { userId: adminUserId, via: 'cli' });
    const secret = (await sessionCookieOf(signInUrl)).slice('ei_session='.length);
    const script = Buffer.from(await (await fetch(`${service.url}/console/app.js`)).arrayBuffer());

    const shown: number[] = [];
    const loadEvent: number[] = [];
    const ready: number[] = [];
    for (let run = 0; run < runs; run += 1) {
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      await context.addCookies([{ name: 'ei_session', value: secret, url: service.url }]);
      const page = await context.newPage();
      const started = performance.now();
      await page.goto(`${service.url}/`);
      await page.getByRole('table', { name: 'API keys of this employer' }).waitFor();
      shown.push(performance.now() - started);
      loadEvent.push(await page.evaluate<number>("performance.getEntriesByType('navigation')[0].loadEventEnd"));
      ready.push(await page.evaluate<number>("performance.getEntriesByName('console-ready')[0].startTime"));
      await context.close();
    }
    shown.sort((a, b) => a - b);
    loadEvent.sort((a, b) => a - b);
    ready.sort((a, b) => a - b);
    const ms = (value: number) => `${value.toFixed(0)} ms`;
    console.log(`console first load, ${runs} fresh contexts (from navigation, in the browser): page rendered with its data p50 ${ms(percentile(ready, 50))}, p90 ${ms(percentile(ready, 90))}, max ${ms(ready.at(-1)!)}; load event p50 ${ms(percentile(loadEvent, 50))}`);
    console.log(`  as the test driver sees it (goto to table found, with the DevTools round trips): p50 ${ms(percentile(shown, 50))}, p90 ${ms(percentile(shown, 90))}`);
    console.log(`console app.js: ${(script.length / 1024).toFixed(1)} kB, ${(gzipSync(script).length / 1024).toFixed(1)} kB gzipped`);
  } finally {
    await browser.close();
    await service.stopAll();
  }
}
