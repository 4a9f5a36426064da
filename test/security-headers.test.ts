import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { CARRIES_SECRET } from '../src/http/security-headers.js';
import {
  as,
  basic,
  newTenant,
  PRODUCTION_ENV,
  startApp,
  type Tenant,
  type TestApp,
} from './helpers.js';

describe('headers on every answer', () => {
  let t: TestApp;
  let owner: Tenant;
  before(async () => {
    t = await startApp();
    owner = await newTenant(t.app);
  });
  after(() => t.close());

  /** One answer of each kind: success, refusal, no route, a framework error, docs, portal. */
  const answers = async (): Promise<Array<[string, LightMyRequestResponse]>> => [
    ['a list', await as(t.app, owner, { url: '/v1/pets' })],
    ['a 401', await t.app.inject({ url: '/v1/pets' })],
    ['a 404', await t.app.inject({ url: '/v1/nothing-here' })],
    ['a bad URL encoding', await t.app.inject({ url: '/v1/pets/%zz' })],
    ['a body refused', await as(t.app, owner, { method: 'POST', url: '/v1/pets', payload: '{' })],
    ['the document', await t.app.inject({ url: '/v1/openapi.json' })],
    ['the docs page', await t.app.inject({ url: '/docs/' })],
    ['a health probe', await t.app.inject({ url: '/healthz' })],
    ['the portal', await t.app.inject({ url: '/portal/sign-in' })],
  ];

  it('says nosniff on every answer, errors included, and no HSTS outside production', async () => {
    for (const [what, res] of await answers()) {
      assert.equal(res.headers['x-content-type-options'], 'nosniff', what);
      assert.equal(res.headers['strict-transport-security'], undefined, what);
    }
  });

  it('refuses framing of the docs page', async () => {
    const res = await t.app.inject({ url: '/docs/' });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['x-frame-options'], 'DENY');
    assert.match(String(res.headers['content-security-policy']), /frame-ancestors 'none'/);
  });

  it('gives the docs pages a whole CSP: their own origin, no inline script but their own by hash', async () => {
    const reference = await t.app.inject({ url: '/docs/' });
    assert.deepEqual(directives(reference).get('script-src'), ["'self'"]);
    assert.equal(inlineScripts(reference.body).length, 0, 'the reference runs no script');
    const page = await t.app.inject({ url: '/docs/try/' });
    const policy = directives(page);
    assert.deepEqual(policy.get('default-src'), ["'self'"]);
    assert.deepEqual(policy.get('object-src'), ["'none'"]);
    assert.deepEqual(policy.get('base-uri'), ["'none'"]);
    assert.deepEqual(policy.get('frame-ancestors'), ["'none'"]);
    const scripts = policy.get('script-src') ?? [];
    assert.ok(
      !scripts.includes("'unsafe-inline'") && !scripts.includes("'unsafe-eval'"),
      scripts.join(' '),
    );
    // Scalar's page holds one inline script: exactly the scripts on the page are allowed.
    const inline = inlineScripts(page.body);
    assert.equal(inline.length, 1, page.body);
    assert.deepEqual(scripts, ["'self'", ...inline.map(sha256)]);
    // "Test Request" reaches this server; no upgrade on a laptop's plain http.
    assert.deepEqual(policy.get('connect-src')?.[0], "'self'");
    assert.equal(policy.get('upgrade-insecure-requests'), undefined);
    // The pages' other answers (the script, the document, the redirect) carry the policy too.
    for (const url of ['/docs', '/docs/try', '/docs/try/js/scalar.js', '/docs/try/openapi.json']) {
      const res = await t.app.inject({ url });
      assert.deepEqual(directives(res).get('script-src'), ["'self'"], url);
      assert.equal(res.headers['x-frame-options'], 'DENY', url);
    }
  });

  it('answers every secret with Cache-Control: no-store, its replay too, and nothing else so', async () => {
    const key = randomUUID();
    const newKey = {
      method: 'POST' as const,
      url: '/v1/keys',
      headers: { authorization: basic(owner.email, owner.password), 'idempotency-key': key },
      payload: { name: 'no-store' },
    };
    const made = await t.app.inject(newKey);
    const replayed = await t.app.inject(newKey);
    const endpoint = await as(t.app, owner, {
      method: 'POST',
      url: '/v1/webhooks',
      payload: { url: 'http://127.0.0.1:9/hook', events: ['*'] },
    });
    const rotated = await as(t.app, owner, {
      method: 'POST',
      url: `/v1/webhooks/${endpoint.json().id}/rotate-secret`,
    });
    for (const [what, res, status] of [
      ['a new key', made, 201],
      ['its replay', replayed, 201],
      ['a new endpoint', endpoint, 201],
      ['a rotated secret', rotated, 200],
    ] as const) {
      assert.equal(res.statusCode, status, `${what}: ${res.body}`);
      assert.equal(res.headers['cache-control'], 'no-store', what);
    }
    assert.equal(replayed.headers['idempotent-replayed'], 'true');
    // Answers without a secret keep their own caching (the lists' ETags and revalidation).
    const list = await as(t.app, owner, { url: '/v1/webhooks' });
    assert.notEqual(list.headers['cache-control'], 'no-store');
  });

  it('marks exactly the operations that answer a secret, in the OpenAPI document', async () => {
    const document = (await t.app.inject({ url: '/v1/openapi.json' })).json();
    const schemas = document.components.schemas as Record<string, Record<string, unknown>>;
    const resolve = (schema: Record<string, unknown>) =>
      typeof schema.$ref === 'string'
        ? (schemas[schema.$ref.split('/').pop() as string] ?? {})
        : schema;
    const marked: string[] = [];
    for (const operations of Object.values(document.paths) as Array<Record<string, any>>) {
      for (const operation of Object.values(operations)) {
        for (const [status, response] of Object.entries(operation.responses ?? {}) as any) {
          const schema = response.content?.['application/json']?.schema;
          if (status.startsWith('2') && schema && resolve(schema)[CARRIES_SECRET] === true) {
            marked.push(operation.operationId);
          }
        }
      }
    }
    assert.deepEqual(marked.sort(), ['createApiKey', 'createWebhook', 'rotateWebhookSecret']);
  });
});

/** A Content Security Policy header's directives, by name. */
function directives(res: LightMyRequestResponse): Map<string, string[]> {
  const header = String(res.headers['content-security-policy'] ?? '');
  return new Map(
    header
      .split(';')
      .map((directive) => directive.trim().split(/\s+/))
      .filter(([name]) => name)
      .map(([name = '', ...values]) => [name, values]),
  );
}

/** The text of every `<script>` without `src` on a page. */
function inlineScripts(page: string): string[] {
  return [...page.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)]
    .filter(([, attributes = '']) => !/\bsrc=/.test(attributes))
    .map(([, , body = '']) => body);
}

const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

describe('headers in production', () => {
  it('sends HSTS on every answer', async () => {
    const prod = await startApp({ env: PRODUCTION_ENV });
    try {
      for (const url of ['/v1/pets', '/healthz', '/docs/', '/nothing']) {
        const res = await prod.app.inject({ url });
        assert.equal(
          res.headers['strict-transport-security'],
          'max-age=31536000; includeSubDomains',
          url,
        );
        assert.equal(res.headers['x-content-type-options'], 'nosniff', url);
      }
    } finally {
      await prod.close();
    }
  });

  it('lets the docs page reach the servers its document names, and upgrades to https', async () => {
    const prod = await startApp({
      env: { ...PRODUCTION_ENV, STAGING_BASE_URL: 'https://staging.example.com/v1' },
    });
    try {
      const policy = directives(await prod.app.inject({ url: '/docs/' }));
      assert.deepEqual(policy.get('connect-src'), [
        "'self'",
        'https://api.example.com',
        'https://staging.example.com',
        'https://messages.example.com',
      ]);
      assert.deepEqual(policy.get('upgrade-insecure-requests'), []);
    } finally {
      await prod.close();
    }
  });
});
