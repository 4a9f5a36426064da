/**
 * The storefront example (examples/storefront/) in Chromium, from another origin than the
 * API's, with a publishable key (docs/decisions/0087-publishable-keys.md): it lists the
 * catalogue; the same key cannot write, nor be used from a page of an origin it does not list;
 * a secret key's answers are not readable by the page.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { type Browser, chromium, type Page } from 'playwright-core';
import {
  as,
  basic,
  createCategory,
  createPet,
  newTenant,
  startApp,
  type Tenant,
  type TestApp,
} from '../helpers.js';
import { CHROMIUM_ARGS } from './browser.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const skip =
  existsSync(CHROMIUM) || process.env.CI
    ? false
    : `no Chromium at ${CHROMIUM}: apt-get install chromium (or set CHROMIUM_PATH)`;

const PAGE = readFileSync(new URL('../../examples/storefront/index.html', import.meta.url));

/** The example's folder served as a static site, on 127.0.0.1 at a port of its own: an origin. */
async function staticSite(): Promise<{ server: Server; origin: string }> {
  const server = createServer((request, response) => {
    if (request.url?.split('?')[0] === '/') {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
    } else {
      response.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

describe('the storefront example, in Chromium, from another origin', { skip }, () => {
  let t: TestApp;
  let api: string;
  let shop: { server: Server; origin: string };
  let elsewhere: { server: Server; origin: string };
  let browser: Browser;
  let page: Page;
  let tenant: Tenant;
  let key: string;

  before(async () => {
    t = await startApp();
    api = `${await t.app.listen({ host: '127.0.0.1', port: 0 })}/v1`;
    shop = await staticSite();
    elsewhere = await staticSite();
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
    });
    page = await browser.newPage();
    tenant = await newTenant(t.app);
    const dogs = await createCategory(t.app, tenant, 'Dogs');
    await createPet(t.app, tenant, { name: 'Rex', categoryId: dogs.id });
    await createPet(t.app, tenant, { name: 'Bella', categoryId: dogs.id });
    await createPet(t.app, tenant, { name: 'Gone', categoryId: dogs.id, status: 'sold' });
    const made = await t.app.inject({
      method: 'POST',
      url: '/v1/keys',
      headers: { authorization: basic(tenant.email, tenant.password) },
      payload: { name: 'storefront', type: 'publishable', allowedOrigins: [shop.origin] },
    });
    assert.equal(made.statusCode, 201, made.body);
    key = made.json().key;
  });
  after(async () => {
    await browser?.close();
    shop?.server.close();
    elsewhere?.server.close();
    await t?.close();
  });

  const open = async (site: { origin: string }) => {
    const query = new URLSearchParams({ api, key });
    await page.goto(`${site.origin}/?${query}`);
    // Until the page has said what it found (a function Chromium runs: no DOM types here).
    await page.waitForFunction(
      "!document.getElementById('status').textContent.startsWith('Loading')",
    );
    return {
      status: await page.locator('#status').innerText(),
      pets: await page.getByRole('listitem').allInnerTexts(),
    };
  };

  /** What the page's own script gets for a fetch: the status it could read, or the failure. */
  const fetchFromPage = (
    url: string,
    init: { method?: string; body?: string; secret?: string } = {},
  ) =>
    page.evaluate(
      async ({ url, init, key }) => {
        try {
          const res = await fetch(url, {
            method: init.method ?? 'GET',
            headers: {
              authorization: `Bearer ${init.secret ?? key}`,
              ...(init.body && { 'content-type': 'application/json' }),
            },
            ...(init.body && { body: init.body }),
          });
          const body = (await res.json()) as { code?: string };
          return `${res.status} ${body.code ?? 'ok'}`;
        } catch (err) {
          return `refused: ${(err as Error).name}`;
        }
      },
      { url, init, key },
    );

  it('lists the available pets with the publishable key', async () => {
    const shown = await open(shop);
    assert.equal(shown.status, '2 available.');
    assert.deepEqual(shown.pets.sort(), ['Bella (Dogs)', 'Rex (Dogs)']);
    await page.screenshot({ path: 'test/test-output/storefront.png' });
  });

  it('cannot write with it: the browser is not let to send, and nothing changes', async () => {
    await open(shop);
    const body = JSON.stringify({ name: 'Intruder', categoryId: 1 });
    assert.equal(
      await fetchFromPage(`${api}/pets`, { method: 'POST', body }),
      'refused: TypeError',
    );
    assert.equal(await fetchFromPage(`${api}/pets/1`, { method: 'DELETE' }), 'refused: TypeError');
    // Nor read beyond the catalogue: no preflight is answered there.
    assert.equal(await fetchFromPage(`${api}/store/orders`), 'refused: TypeError');
    // An error of a catalogue read reaches the page, which can read why.
    assert.equal(await fetchFromPage(`${api}/pets/999`), '404 not_found');
    const pets = await as(t.app, tenant, { url: '/v1/pets' });
    assert.deepEqual(
      pets
        .json()
        .map((p: { name: string }) => p.name)
        .sort(),
      ['Bella', 'Gone', 'Rex'],
    );
  });

  it('is refused on a page of an origin it does not list', async () => {
    const shown = await open(elsewhere);
    assert.match(shown.status, /could not be read/);
    assert.deepEqual(shown.pets, []);
  });

  it("a secret key's answers are not readable by any page", async () => {
    await open(shop);
    const secret = tenant.key;
    assert.equal(await fetchFromPage(`${api}/pets`, { secret }), 'refused: TypeError');
  });
});
