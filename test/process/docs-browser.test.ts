/**
 * The docs pages stay home (issue 22): the reference at /docs and the explorer at /docs/try/ in
 * Chromium (Debian's, through playwright-core), an operation opened from the reference and sent
 * with "Test Request" in the explorer, and every request the pages make recorded.
 * None may leave the service's origin, and none may miss (the favicon was a 404). The portal's
 * walk in test/process/portal-browser.test.ts records its requests the same way.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { type Browser, chromium, type Page } from 'playwright-core';
import { startApp, storeKey, type TestApp } from '../helpers.js';
import { CHROMIUM_ARGS, recordRequests } from './browser.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const skip =
  existsSync(CHROMIUM) || process.env.CI
    ? false
    : `no Chromium at ${CHROMIUM}: apt-get install chromium (or set CHROMIUM_PATH)`;

/** A free port: the docs' server list names the configured PORT, so the app must listen on it. */
async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('API docs in Chromium, nothing loaded from elsewhere', { skip }, () => {
  let t: TestApp;
  let base: string;
  let browser: Browser;
  let page: Page;
  let requests: ReturnType<typeof recordRequests>;

  before(async () => {
    const port = await freePort();
    t = await startApp({ env: { PORT: String(port) } });
    base = await t.app.listen({ host: '127.0.0.1', port });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
    });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    requests = recordRequests(page, new URL(base).origin);
    // What the page's Content Security Policy blocks, as the page itself is told of it.
    await page.addInitScript(`
      window.cspViolations = [];
      document.addEventListener('securitypolicyviolation', (event) => {
        window.cspViolations.push(event.violatedDirective + ' ' + event.blockedURI + ' ' + event.sourceFile);
      });
    `);
  });

  /** The page's CSP violations but one: Scalar (through Zod) tries `new Function('')` once to
   * learn whether it may compile validators, and works without when it may not. */
  const violations = async () =>
    ((await page.evaluate('window.cspViolations')) as string[]).filter(
      (violation) =>
        !/^script-src eval .*\/docs\/try\/js\/scalar\.[0-9a-f]{16}\.js$/.test(violation),
    );

  after(async () => {
    await browser?.close();
    await t?.close();
  });

  it('shows the reference at once, with no script, and fits 390, 768 and 1280 px', async () => {
    for (const width of [390, 768, 1280]) {
      const narrow = await browser.newPage({ viewport: { width, height: 800 } });
      const seen = recordRequests(narrow, new URL(base).origin);
      const loaded = await narrow.goto(`${base}/docs`);
      assert.match(loaded?.headers()['content-security-policy'] ?? '', /script-src 'self';/);
      assert.equal(await narrow.locator('script').count(), 0);
      assert.ok(await narrow.locator('main h1').isVisible());
      const wider = (await narrow.evaluate(
        'document.documentElement.scrollWidth - document.documentElement.clientWidth',
      )) as number;
      assert.ok(wider <= 0, `${width} px: the page is ${wider} px wider than the window`);
      await narrow.screenshot({ path: `test/test-output/docs-reference-${width}.png` });
      assert.deepEqual(seen.away, []);
      assert.deepEqual(seen.failed, []);
      await narrow.close();
    }
  });

  it('opens an operation from the reference and answers "Test Request" with real pets, from this origin alone', async () => {
    const key = await storeKey(t.databaseUrl);
    const warnings: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'warning' || message.type() === 'error') warnings.push(message.text());
    });
    await page.goto(`${base}/docs`);
    await page.locator('[id="op/listPets"] a.try').click();
    await page.waitForURL(/\/docs\/try\/#tag\/pets\/GET\/pets$/);
    await page
      .locator('[id="api-1/tag/pets/GET/pets"]')
      .getByRole('heading', { name: 'List animals' })
      .waitFor();
    // Scalar checks the document it is given, and logs what it finds wrong.
    assert.deepEqual(
      warnings.filter((w) => /validation/i.test(w)),
      [],
      'Scalar found the document invalid',
    );
    await page
      .getByRole('button', { name: /Test Request/ })
      .first()
      .click();
    const send = page.getByRole('button', { name: /^Send get request/ });
    await send.waitFor();
    // The client's authentication section may open collapsed.
    const token = page.getByPlaceholder('Token').last();
    if (!(await token.isVisible())) {
      await page
        .getByRole('button', { name: /^Authentication/ })
        .last()
        .click();
    }
    await token.fill(key);
    const [answer] = await Promise.all([
      page.waitForResponse((r) => new URL(r.url()).pathname === '/v1/pets'),
      send.click(),
    ]);
    assert.equal(answer.status(), 200);
    assert.equal(answer.request().headers().authorization, `Bearer ${key}`);
    assert.ok(Array.isArray(await answer.json()));
    // Whatever the page would still fetch after the answer (a lazy chunk, telemetry).
    await page.waitForTimeout(1_000);
    await page.screenshot({ path: 'test/test-output/docs-test-request.png' });

    assert.deepEqual(requests.away, [], 'requests that left the origin');
    assert.deepEqual(requests.failed, [], 'requests that failed or missed');
    assert.deepEqual(await violations(), [], 'what its Content Security Policy blocked');
  });

  it('runs the explorer under a CSP without inline scripts: its own runs by its hash, nothing blocked', async () => {
    const loaded = await page.goto(`${base}/docs/try/`);
    const policy = loaded?.headers()['content-security-policy'] ?? '';
    const scripts = /(?:^|; )script-src ([^;]*)/.exec(policy)?.[1] ?? '';
    assert.match(scripts, /^'self' 'sha256-[A-Za-z0-9+/]+=*'$/, policy);
    await page.getByText('List animals').first().waitFor();
    assert.deepEqual(await violations(), []);
  });

  it("offers none of Scalar's hosted features: no AI, no MCP, no toolbar", async () => {
    await page.goto(`${base}/docs/try/`);
    await page.getByText('List animals').first().waitFor();
    const text = await page.locator('body').innerText();
    assert.doesNotMatch(text, /Ask AI|Generate MCP|Share|Deploy|Configure/i);
    assert.deepEqual(requests.away, []);
  });

  it('serves its favicon at /favicon.ico too', async () => {
    const res = await fetch(`${base}/favicon.ico`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'image/svg+xml');
    assert.match(await res.text(), /^<svg /);
  });
});
