import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { type Browser, chromium } from 'playwright-core';
import { type ForwardingServer, type Live, live, proxy } from './live.js';

/** The built package and openapi-fetch's browser build, as a site would serve them. */
const FILES: Record<string, URL> = {
  '/vendor/openapi-fetch.mjs': new URL(
    '../../../node_modules/openapi-fetch/dist/index.mjs',
    import.meta.url,
  ),
};
const PAGE = `<!doctype html>
<title>SDK</title>
<script type="importmap">
{"imports": {"@animal-store/client": "/sdk/index.js", "openapi-fetch": "/vendor/openapi-fetch.mjs"}}
</script>
<script type="module">
import * as sdk from '@animal-store/client';
window.sdk = sdk;
</script>`;

/**
 * The built SDK in Chromium, from a page of a small site that serves it and forwards the API
 * (same origin: the service sends no CORS headers).
 */
describe('the SDK in a browser', () => {
  let server: Live;
  let site: ForwardingServer;
  let browser: Browser;
  const idempotencyKeys: unknown[] = [];
  const agents: unknown[] = [];
  before(async () => {
    server = await live();
    site = await proxy(server.origin, (req, res) => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      if (req.method === 'POST') {
        idempotencyKeys.push(req.headers['idempotency-key']);
        agents.push(req.headers['user-agent']);
      }
      if (path === '/') {
        res.writeHead(200, { 'content-type': 'text/html' }).end(PAGE);
        return true;
      }
      // The built modules, in their folders (names only: no `..`).
      const module = /^\/sdk\/((?:[\w-]+\/)*[\w-]+\.js)$/.exec(path)?.[1];
      const file = module ? new URL(`../dist/esm/${module}`, import.meta.url) : FILES[path];
      if (!file) return false;
      if (!existsSync(file)) {
        res.writeHead(404).end();
        return true;
      }
      res.writeHead(200, { 'content-type': 'text/javascript' }).end(readFileSync(file, 'utf8'));
      return true;
    });
    browser = await chromium.launch({
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
      ],
    });
  });
  after(async () => {
    await browser?.close();
    await site?.close();
    await server?.close();
  });

  it('creates a category with the browser fetch, an Idempotency-Key and the rate-limit state', async () => {
    const tenant = await server.tenant();
    const page = await browser.newPage();
    await page.goto(`${site.origin}/`);
    await page.waitForFunction(() => 'sdk' in globalThis);
    const result = await page.evaluate(async (key) => {
      // Runs in the page: its window, with the module the page imported.
      const window = globalThis as unknown as {
        sdk: typeof import('../src/index.js');
        location: { origin: string };
      };
      const client = window.sdk.createClient({
        apiKey: key,
        baseUrl: `${window.location.origin}/v1`,
      });
      const category = await client.categories.create({ name: 'Browser' });
      const { response } = await client.categories.delete(category.id).withResponse();
      // Web Crypto's HMAC, as in Node: the test-signing helper and the check agree.
      const secret = 'whsec_0123456789ABCDEFGHIJabcdefghijKL';
      const payload = '{"id":"evt_1","type":"pet.created","createdAt":"x","data":{}}';
      const headers = await window.sdk.generateWebhookTestHeaders({ payload, secret });
      const signed = headers['animal-store-signature'];
      return {
        category,
        limit: client.rateLimit?.limit,
        created: category.lastResponse.status,
        deleted: response.status,
        verified: await window.sdk.verifyWebhookSignature(secret, signed, payload),
      };
    }, tenant.key);
    assert.deepEqual(result, {
      category: { id: 1, name: 'Browser' },
      limit: 1e6,
      created: 201,
      deleted: 204,
      verified: true,
    });
    assert.ok(site.seen.includes('POST /v1/categories'));
    assert.equal(idempotencyKeys.length, 1);
    assert.match(String(idempotencyKeys[0]), /^[\w-]{16,}$/, 'a fresh Idempotency-Key');
    // A page may not set User-Agent: the browser's own goes.
    assert.match(String(agents[0]), /Chrome\//);
    assert.doesNotMatch(String(agents[0]), /animal-store-client/);
  });
});
