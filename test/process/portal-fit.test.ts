/**
 * Every portal page fits a phone, a tablet and a laptop (390, 768 and 1280 px wide) in a real
 * browser: Debian's Chromium through playwright-core. Each page is filled with content first
 * (keys with long names and many scopes, webhook endpoints with long addresses and their
 * deliveries, requests in the log including errors), then measured at each width: no sideways
 * scrolling of the page, no box that clips what it holds (a table's column behind a scroll),
 * no text drawn under 10 px (the chart's included). Screenshots of every page at every width
 * land in test-output/portal-fit/ for a person to look at.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { FAST, startApp, type TestApp, until } from '../helpers.js';
import { CHROMIUM_ARGS } from './browser.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SHOTS =
  process.env.PORTAL_SHOTS ?? join(import.meta.dirname, '..', 'test-output', 'portal-fit');
const skip =
  existsSync(CHROMIUM) || process.env.CI
    ? false
    : `no Chromium at ${CHROMIUM}: apt-get install chromium (or set CHROMIUM_PATH)`;

/** A phone, a tablet, a laptop. */
const WIDTHS = [390, 768, 1280] as const;

/**
 * Boxes that scroll on purpose: a shell command is copied whole, never wrapped; a text field
 * scrolls its value (a new key's secret, taken whole by its Copy button).
 */
const SCROLLS_ON_PURPOSE = 'pre.command, input';

/**
 * What is wrong with the page as laid out now, one sentence a problem. A string, not a
 * function: tsx's helpers do not exist in the page. Elements of 1 px or less are the visually
 * hidden text for screen readers, clipped on purpose; `title`, `desc` and a closed select's
 * options are never drawn.
 */
const MEASURE = `(() => {
  const problems = [];
  const name = (e) => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') +
    (typeof e.className === 'string' && e.className.trim() ? '.' + e.className.trim().split(/\\s+/).join('.') : '');
  const root = document.documentElement;
  if (root.scrollWidth > innerWidth) {
    const wide = [...document.querySelectorAll('body *')]
      .filter((e) => e.getBoundingClientRect().right > innerWidth + 0.5)
      .slice(0, 3).map(name);
    problems.push('the page is ' + root.scrollWidth + ' px wide in ' + innerWidth + ': ' + wide.join(', '));
  }
  for (const e of document.querySelectorAll('body *')) {
    const style = getComputedStyle(e);
    const box = e.getBoundingClientRect();
    const drawn = e.getClientRects().length > 0 && style.visibility !== 'hidden' && box.width > 1 && box.height > 1;
    if (!drawn) continue;
    const clips = (overflow) => overflow !== 'visible';
    if (!e.matches(${JSON.stringify(SCROLLS_ON_PURPOSE)})) {
      if (clips(style.overflowX) && e.scrollWidth > e.clientWidth + 1)
        problems.push(name(e) + ' clips its content sideways: ' + e.scrollWidth + ' px in ' + e.clientWidth);
      if (clips(style.overflowY) && e.scrollHeight > e.clientHeight + 1)
        problems.push(name(e) + ' clips its content: ' + e.scrollHeight + ' px high in ' + e.clientHeight);
    }
    const text = [...e.childNodes].filter((n) => n.nodeType === 3).map((n) => n.textContent.trim()).join(' ').trim();
    if (text === '' || e.closest('title, desc, option, script, style')) continue;
    let size = parseFloat(style.fontSize);
    // An SVG drawn smaller than its viewBox draws its text smaller too.
    if (e instanceof SVGElement && e.getScreenCTM()) size *= Math.abs(e.getScreenCTM().d);
    if (size < 10) problems.push(name(e) + ' "' + text.slice(0, 30) + '" is ' + size.toFixed(1) + ' px');
  }
  return problems;
})()`;

/** The chart's bars of today that are drawn at this width, as the screen shows them. */
const TODAY = `(() => [...document.querySelectorAll('.chart svg rect.today')]
  .filter((r) => r.getClientRects().length > 0)
  .map((r) => { const b = r.getBoundingClientRect(); return { width: b.width, height: b.height }; }))()`;

describe('every portal page fits 390, 768 and 1280 px in Chromium', { skip }, () => {
  let t: TestApp;
  let base: string;
  let profile: string;
  let context: BrowserContext;
  let page: Page;
  let receiver: Server;
  let hookBase = '';
  const email = `fit-${Date.now()}@example.com`;
  const password = 'a long browser password';
  /** The key the pages' content is made with (pets and orders to write, webhooks to read). */
  let key = '';

  /**
   * What is wrong with a page at each width, and its screenshots: the page at `path`, loaded at
   * each width, or without one the page open now (a form's answer), laid out again.
   */
  const measure = async (label: string, path: string | undefined) => {
    const problems: string[] = [];
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: 900 });
      if (path !== undefined) await page.goto(`${base}${path}`);
      await page.screenshot({ path: join(SHOTS, `${label}-${width}.png`), fullPage: true });
      const seen = (await page.evaluate(MEASURE)) as string[];
      problems.push(...seen.map((problem) => `${width} px: ${problem}`));
    }
    return problems;
  };

  before(async () => {
    rmSync(SHOTS, { recursive: true, force: true });
    mkdirSync(SHOTS, { recursive: true });
    t = await startApp({ env: FAST, ownStore: true });
    base = await t.app.listen({ host: '127.0.0.1', port: 0 });
    // One endpoint takes its events, the other refuses them: the log shows both answers.
    receiver = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(req.url?.includes('refuses') ? 500 : 204).end());
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    hookBase = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    profile = mkdtempSync(join(tmpdir(), 'animal-store-chromium-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
    });
    page = context.pages()[0] ?? (await context.newPage());
  });

  after(async () => {
    await context?.close();
    await t?.close();
    receiver?.closeAllConnections();
    await new Promise((resolve) => receiver?.close(resolve));
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  it('fits the signed-out pages: sign in, create an account, an error', async () => {
    const problems = [
      ...(await measure('sign-in', '/portal/sign-in')),
      ...(await measure('sign-up', '/portal/sign-up')),
      ...(await measure('not-found', '/portal/no-such-page')),
    ];
    assert.deepEqual(problems, []);
  });

  it('fits the keys page with a key just made, its curl line and the list', async () => {
    await page.goto(`${base}/portal/sign-up`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByText('Your account is ready').waitFor();

    // Keys as people make them: a long name, every read scope, a few ticked.
    await page.getByLabel('Name (optional)').fill('read everything for the nightly dashboard');
    await page.getByLabel('Read only').check();
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByLabel('Secret key').waitFor();
    await page.goto(`${base}/portal/keys`);
    await page.getByLabel('Name (optional)').fill('shop backend (production, eu-west-1)');
    await page.getByLabel('Only the scopes ticked below').check();
    for (const scope of ['pets write', 'orders write', 'webhooks read', 'requests read']) {
      await page.getByLabel(scope).check();
    }
    await page.getByRole('button', { name: 'Create key' }).click();
    key = await page.getByLabel('Secret key').inputValue();
    const problems = await measure('key-created', undefined);
    const command = page.locator('pre', { hasText: 'curl' });
    const curl = await command.innerText();
    const wraps = await page.evaluate(
      `getComputedStyle([...document.querySelectorAll('pre')].find((pre) => pre.textContent.startsWith('curl'))).whiteSpace`,
    );
    problems.push(...(await measure('keys', '/portal/keys')));
    const revoke = await page
      .getByRole('link', { name: /^Revoke key/ })
      .first()
      .getAttribute('href');
    problems.push(...(await measure('revoke', revoke ?? '')));
    assert.deepEqual(problems, []);
    // The curl line is what the shell reads: its lines end where the text says, at a space, and
    // a line too long for the screen scrolls in its own box rather than wrap inside a word.
    assert.match(curl, /^curl /);
    assert.ok(curl.includes(`Bearer ${key}"`), curl);
    assert.equal(wraps, 'pre', 'the browser wraps the command where it likes');
  });

  it('fits the account page', async () => {
    assert.deepEqual(await measure('account', '/portal/account'), []);
  });

  it('fits the webhooks pages: endpoints, a secret just shown, the delivery log', async () => {
    const urls = [
      `${hookBase}/hooks/animal-store/orders-and-pets-for-the-warehouse-system`,
      `${hookBase}/hooks/refuses/everything-with-a-server-error`,
    ];
    for (const url of urls) {
      await page.goto(`${base}/portal/webhooks`);
      await page.getByLabel('Endpoint URL').fill(url);
      await page.getByRole('button', { name: 'Add endpoint' }).click();
      await page.getByLabel('Signing secret').waitFor();
    }
    const problems = await measure('webhook-created', undefined);
    await page.goto(`${base}/portal/webhooks`);
    const link = page.getByRole('link', { name: /refuses/ });
    const endpoint = (await link.getAttribute('href')) ?? '';
    await page.goto(`${base}${endpoint}`);
    await page.getByRole('button', { name: 'Send a test event' }).click();
    // The context's own requests carry its session.
    await until(
      async () =>
        /<td[^>]*>500<\/td>/.test(await (await page.request.get(`${base}${endpoint}`)).text()),
      'a refused delivery in the log',
    );
    problems.push(...(await measure('webhooks', '/portal/webhooks')));
    problems.push(...(await measure('webhook', endpoint)));
    assert.deepEqual(problems, []);
  });

  it('fits the requests pages: the chart with today drawn and labelled, the list, an entry', async () => {
    const auth = { authorization: `Bearer ${key}` };
    for (let i = 0; i < 3; i++)
      assert.equal((await fetch(`${base}/v1/pets`, { headers: auth })).status, 200);
    // Errors of two kinds: a scope the key does not hold, and a body the API refuses.
    const category = await fetch(`${base}/v1/categories`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Dogs' }),
    });
    assert.equal(category.status, 403);
    const refused = await fetch(`${base}/v1/pets?limit=100&status=available&sort=-createdAt`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Rex', categoryId: 424242, password: 'never-shown' }),
    });
    assert.equal(refused.status, 400);
    const id = refused.headers.get('x-request-id') ?? '';
    await t.app.requestLog.flush();

    const problems = await measure('requests', '/portal/requests');
    problems.push(...(await measure('requests-errors', '/portal/requests?errors=1')));
    problems.push(...(await measure('request', `/portal/requests/${id}`)));
    // The entry names its key as the list does, its id beside it.
    const named = await page.locator('dt:has-text("Key") + dd').innerText();
    assert.match(named, /^shop backend \(production, eu-west-1\)/);
    assert.match(named, /key_[0-9A-Za-z]+/);
    await page.goto(`${base}/portal/requests`);
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: 900 });
      // Today's requests are a bar of their own that a person can see, under a label.
      const bars = (await page.evaluate(TODAY)) as Array<{ width: number; height: number }>;
      assert.ok(bars.length > 0, `${width} px: no bar of today is drawn`);
      assert.ok(
        bars.some((bar) => bar.width >= 2 && bar.height >= 3),
        `${width} px: today's bars are hairlines: ${JSON.stringify(bars)}`,
      );
      const label = page.locator('.chart').getByText('Today', { exact: true });
      assert.ok(await label.isVisible(), `${width} px: today is not labelled`);
    }
    assert.deepEqual(problems, []);
  });
});
