/**
 * The portal's reset of the test data in Chromium (issue 55): from the account page, behind its
 * confirmation, with the sample ticked; the catalogue then holds the sample alone.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { type Browser, chromium, type Page } from 'playwright-core';
import { as, createCategory, createPet, startApp, type Tenant, type TestApp } from '../helpers.js';
import { CHROMIUM_ARGS, recordRequests } from './browser.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const skip =
  existsSync(CHROMIUM) || process.env.CI
    ? false
    : `no Chromium at ${CHROMIUM}: apt-get install chromium (or set CHROMIUM_PATH)`;

describe('resetting the test data from the portal, in Chromium', { skip }, () => {
  let t: TestApp;
  let base: string;
  let browser: Browser;
  let page: Page;

  before(async () => {
    t = await startApp();
    base = await t.app.listen({ host: '127.0.0.1', port: 0 });
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
    });
    page = await browser.newPage({ viewport: { width: 390, height: 800 } });
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  it('resets behind a confirmation and adds the sample, from this origin alone', async () => {
    const requests = recordRequests(page, new URL(base).origin);
    const email = `sandbox-${crypto.randomUUID()}@example.com`;
    const password = 'a long enough password';
    await page.goto(`${base}/portal/sign-up`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByText('Your account is ready').waitFor();
    // A key of the account's, to fill its catalogue through the API.
    const key = await t.app.inject({
      method: 'POST',
      url: '/v1/keys',
      headers: { authorization: `Basic ${Buffer.from(`${email}:${password}`).toString('base64')}` },
    });
    const tenant = { headers: { authorization: `Bearer ${key.json().key}` } } as unknown as Tenant;
    const old = await createCategory(t.app, tenant, 'Old');
    await createPet(t.app, tenant, { name: 'Old pet', categoryId: old.id });

    await page.goto(`${base}/portal/account`);
    await page.getByRole('link', { name: 'Reset test data…' }).click();
    await page.getByRole('button', { name: 'Reset test data' }).waitFor();
    await page.getByRole('checkbox').check();
    await page.getByRole('button', { name: 'Reset test data' }).click();
    await page.getByRole('heading', { name: 'Test data reset' }).waitFor();
    const said = await page.getByRole('status').innerText();
    assert.match(said, /Removed 1 pet, 1 category/);
    assert.match(said, /Added the sample: 3 categories, 6 pets/);
    await page.screenshot({ path: 'test/test-output/portal-sandbox-reset.png' });

    const categories = await as(t.app, tenant, { method: 'GET', url: '/v1/categories' });
    assert.deepEqual(
      categories.json().map((c: { name: string }) => c.name),
      ['Dogs', 'Cats', 'Birds'],
    );
    assert.deepEqual(requests.away, []);
    assert.deepEqual(requests.failed, []);
  });
});
