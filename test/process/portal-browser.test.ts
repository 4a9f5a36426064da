/**
 * The developer portal driven end to end by a real browser: Debian's Chromium through
 * playwright-core (never a downloaded browser). Screenshots of every page land in
 * test-output/portal/ for a person to look at.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { startApp, type TestApp } from '../helpers.js';
import { CHROMIUM_ARGS, recordRequests } from './browser.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SHOTS = join(import.meta.dirname, '..', 'test-output', 'portal');
// CI installs Chromium and must run this; a laptop without it is told what to install.
const skip =
  existsSync(CHROMIUM) || process.env.CI
    ? false
    : `no Chromium at ${CHROMIUM}: apt-get install chromium (or set CHROMIUM_PATH)`;

describe('developer portal in Chromium', { skip }, () => {
  let t: TestApp;
  let base: string;
  let profile: string;
  let context: BrowserContext;
  let page: Page;
  let shot = 0;
  let requests: ReturnType<typeof recordRequests>;
  const email = `browser-${Date.now()}@example.com`;
  const password = 'a long browser password';

  const screenshot = async (name: string) => {
    shot++;
    await page.screenshot({
      path: join(SHOTS, `${String(shot).padStart(2, '0')}-${name}.png`),
      fullPage: true,
    });
  };
  const callApi = (key: string) =>
    fetch(`${base}/v1/pets`, { headers: { authorization: `Bearer ${key}` } });

  before(async () => {
    rmSync(SHOTS, { recursive: true, force: true });
    mkdirSync(SHOTS, { recursive: true });
    t = await startApp();
    base = await t.app.listen({ host: '127.0.0.1', port: 0 });
    profile = mkdtempSync(join(tmpdir(), 'animal-store-chromium-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: { width: 1024, height: 768 },
    });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
    page = context.pages()[0] ?? (await context.newPage());
    requests = recordRequests(page, new URL(base).origin);
  });

  after(async () => {
    await context?.close();
    await t?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  it('lands on sign-in from the root and signs up', async () => {
    await page.goto(`${base}/`);
    assert.equal(new URL(page.url()).pathname, '/portal/sign-in');
    await screenshot('sign-in');

    await page.getByRole('link', { name: 'Create account' }).click();
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill('too short');
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByText('Password must be at least 12 characters long.').waitFor();
    await screenshot('sign-up-error');

    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByText('Your account is ready').waitFor();
    assert.equal(new URL(page.url()).pathname, '/portal/keys');
  });

  it('signs out, refuses a wrong password, and signs in with the keyboard alone', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByText('You are signed out.').waitFor();

    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill('not the password at all');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('The email or password is wrong.').waitFor();
    await screenshot('sign-in-refused');

    await page.goto(`${base}/portal/sign-in`);
    await page.getByLabel('Email').focus();
    await page.keyboard.type(email);
    await page.keyboard.press('Tab');
    await page.keyboard.type(password);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Your account' }).waitFor();
    await screenshot('account');
  });

  let secret = '';

  it('creates a key, shows it once with a copy button, and the key calls the API', async () => {
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByLabel('Name (optional)').fill('browser test');
    await page.getByRole('button', { name: 'Create key' }).click();
    const input = page.getByLabel('Secret key');
    secret = await input.inputValue();
    assert.match(secret, /^as_test_[0-9A-Za-z]{40}$/);
    await page.getByRole('button', { name: 'Copy' }).click();
    await page.getByText('Copied to the clipboard.').waitFor();
    assert.equal(await page.evaluate('navigator.clipboard.readText()'), secret);
    await screenshot('key-created');

    assert.equal((await callApi(secret)).status, 200);

    // Shown once: the list shows the prefix only, and the secret is on no later page.
    await page.goto(`${base}/portal/keys`);
    const listed = await page.content();
    assert.ok(!listed.includes(secret), 'the secret is shown again');
    assert.ok(listed.includes(`${secret.slice(0, 12)}…`));
    await screenshot('keys');
  });

  it('shows the call on the account page as usage, in a bar per window', async () => {
    await page.getByRole('link', { name: 'Account' }).click();
    // The minute may turn between the call and the page; the UTC day almost never does.
    const day = page.getByRole('meter', { name: 'Today (UTC)' });
    assert.equal(await day.getAttribute('value'), '1');
    const minute = page.getByRole('meter', { name: 'This minute' });
    assert.equal(await minute.getAttribute('max'), '60');
    assert.equal(
      await page.getByRole('meter', { name: 'Today (UTC)' }).getAttribute('max'),
      '1000',
    );
    await page.getByText('Free', { exact: true }).waitFor();
  });

  it('refuses a form posted without its CSRF token, changing nothing', async () => {
    await page.goto(`${base}/portal/keys`);
    await page.evaluate(
      `document.querySelector('form[action="/portal/keys"] [name=_csrf]').remove()`,
    );
    await page.getByLabel('Name (optional)').fill('forged');
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST'),
      page.getByRole('button', { name: 'Create key' }).click(),
    ]);
    assert.equal(response.status(), 403);
    await page.getByRole('heading', { name: 'Form expired' }).waitFor();
    await screenshot('csrf-refused');
    await page.goto(`${base}/portal/keys`);
    const keys = page.getByRole('table', { name: 'Test keys' });
    assert.equal(await keys.getByRole('row').count(), 2, 'only the header and the one real key');
  });

  it('revokes the key after a confirmation, and the API refuses it from then on', async () => {
    await page.getByRole('link', { name: 'Revoke key browser test' }).click();
    await page.getByText('This cannot be undone.').waitFor();
    await screenshot('revoke-confirm');
    await page.getByRole('button', { name: 'Revoke key' }).click();
    await page.getByText('The key is revoked.').waitFor();
    await page.getByText('No test keys.').waitFor();
    await screenshot('revoked');

    const refused = await callApi(secret);
    assert.equal(refused.status, 401);
    assert.equal(((await refused.json()) as { code: string }).code, 'invalid_api_key');
  });

  it('is usable at 390 px wide: no sideways scrolling, every key’s Revoke on screen', async () => {
    const width = 390;
    await page.setViewportSize({ width, height: 844 });
    // Two keys in the list, so the widest page has its table.
    for (const name of ['narrow screen', 'a second key with a rather long name']) {
      await page.goto(`${base}/portal/keys`);
      await page.getByLabel('Name (optional)').fill(name);
      await page.getByRole('button', { name: 'Create key' }).click();
      await page.getByLabel('Secret key').waitFor();
    }
    const pageWidth = Number(await page.evaluate('document.documentElement.scrollWidth'));
    assert.ok(pageWidth <= width, `the new key's page is ${pageWidth} px wide`);
    await screenshot('narrow-key-created');
    for (const path of ['/portal/account', '/portal/keys']) {
      await page.goto(`${base}${path}`);
      const scroll = Number(await page.evaluate('document.documentElement.scrollWidth'));
      assert.ok(scroll <= width, `${path} is ${scroll} px wide`);
      // Nothing scrolls sideways inside the page either (the keys table did, hiding Revoke).
      const inner = await page.evaluate(
        `[...document.querySelectorAll('*')].filter((e) => e.clientWidth > 1 && e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX !== 'visible').map((e) => e.tagName + '.' + e.className)`,
      );
      assert.deepEqual(inner, [], `${path} has a sideways scroller`);
      await screenshot(`narrow-${path.split('/').pop()}`);
    }
    for (const name of ['narrow screen', 'a second key with a rather long name']) {
      const revoke = page.getByRole('link', { name: `Revoke key ${name}` });
      const box = await revoke.boundingBox();
      assert.ok(
        box && box.x >= 0 && box.x + box.width <= width,
        `Revoke of ${name}: ${JSON.stringify(box)}`,
      );
    }
    await page.getByRole('link', { name: 'Revoke key narrow screen' }).click();
    await page.getByText('This cannot be undone.').waitFor();
  });

  it('shows the requests: the 7-day chart, an error with its redacted body, at 390 px too', async () => {
    await page.setViewportSize({ width: 1024, height: 768 });
    await page.goto(`${base}/portal/keys`);
    await page.getByLabel('Name (optional)').fill('requests');
    await page.getByRole('button', { name: 'Create key' }).click();
    const key = await page.getByLabel('Secret key').inputValue();
    assert.equal((await callApi(key)).status, 200);
    const refused = await fetch(`${base}/v1/pets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Rex', categoryId: 999, token: 'never-shown' }),
    });
    assert.equal(refused.status, 400);
    const id = refused.headers.get('x-request-id') as string;
    await t.app.requestLog.flush();

    await page.getByRole('navigation').getByRole('link', { name: 'Requests' }).click();
    const chart = page.getByRole('img', { name: /API requests, last 7 days/ });
    await chart.waitFor();
    await page
      .locator('ul.legend')
      .getByText(/2xx: [1-9]/)
      .waitFor();
    await page
      .locator('ul.legend')
      .getByText(/4xx: [1-9]/)
      .waitFor();
    await screenshot('requests');

    await page.getByLabel(/Errors only/).check();
    await page.getByRole('button', { name: 'Show' }).click();
    await page.getByRole('link', { name: 'POST /v1/pets' }).first().click();
    assert.equal(new URL(page.url()).pathname, `/portal/requests/${id}`);
    await page.getByRole('heading', { name: 'The error' }).waitFor();
    const body = await page.content();
    assert.ok(!body.includes('never-shown'), 'a field named like a secret is redacted');
    assert.ok(body.includes('[redacted]'));
    const docs = await page.getByRole('link', { name: 'What the codes mean' }).getAttribute('href');
    assert.match(docs ?? '', /\/docs#description\/errors$/);
    await screenshot('request');

    const width = 390;
    await page.setViewportSize({ width, height: 844 });
    for (const path of ['/portal/requests', `/portal/requests/${id}`]) {
      await page.goto(`${base}${path}`);
      const scroll = Number(await page.evaluate('document.documentElement.scrollWidth'));
      const wide = await page.evaluate(
        `[...document.querySelectorAll('main *')].filter((e) => e.getBoundingClientRect().right > ${width}).map((e) => e.tagName + '.' + e.className).slice(0, 5)`,
      );
      assert.ok(scroll <= width, `${path} is ${scroll} px wide: ${JSON.stringify(wide)}`);
      await screenshot(`narrow-${path.split('/').length > 3 ? 'request' : 'requests'}`);
    }
    const box = await page.getByRole('heading', { name: 'The error' }).boundingBox();
    assert.ok(box && box.x >= 0 && box.x + box.width <= width);
  });

  it('loaded nothing from anywhere but the service, and missed nothing', () => {
    assert.deepEqual(requests.away, [], 'requests that left the origin');
    assert.deepEqual(requests.failed, [], 'pages or assets that failed or missed');
  });
});
