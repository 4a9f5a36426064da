/**
 * Promises the service makes about itself (README, portal, error table, OpenAPI descriptions,
 * configuration docs, SECURITY.md, .spectral.yaml) that no other test kept. Each test names
 * the promise it keeps; docs/promises.md lists every promise and the test that keeps it.
 */
import assert from 'node:assert/strict';
import { createHmac, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { SecretBox } from '../src/domain/secret-box.js';
import { retryDelayMs } from '../src/messages/domain.js';
import type { MessageSink } from '../src/messages/sink.js';
import { openDatabase } from '../src/store/database.js';
import {
  addEndpoint,
  as,
  basic,
  captureLog,
  createCategory,
  createPet,
  errorCode,
  FAST,
  freshIp,
  newTenant,
  nextLinkUrl,
  pathOf,
  planAccount,
  startApp,
  stillClock,
  type Tenant,
  type TestApp,
  until,
} from './helpers.js';
import { Visitor } from './portal-visitor.js';

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

/** A receiver on 127.0.0.1: records every request; `handle` may answer it, else 200. */
class Receiver {
  readonly received: Array<{ path: string; body: string; signature: string }> = [];
  handle: (path: string, res: ServerResponse) => boolean = () => false;
  url = '';
  private server: Server | undefined;

  async start(): Promise<this> {
    this.server = createServer((req: IncomingMessage, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const path = req.url ?? '';
        const body = Buffer.concat(chunks).toString('utf8');
        const signature = String(req.headers['animal-store-signature'] ?? '');
        this.received.push({ path, body, signature });
        if (!this.handle(path, res)) res.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  of(path: string): Array<{ path: string; body: string; signature: string }> {
    return this.received.filter((r) => r.path === path);
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server?.closeAllConnections();
      this.server?.close(() => resolve());
    });
  }
}

interface Delivery {
  id: string;
  eventType: string;
  status: string;
  attempts: number;
  lastStatusCode: number | null;
}

async function deliveries(app: FastifyInstance, tenant: Tenant, id: string): Promise<Delivery[]> {
  const res = await as(app, tenant, { url: `/v1/webhooks/${id}/deliveries?limit=100` });
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

/** Whether `header` (`t=…,v1=…`) carries a signature of `body` by `secret`. */
function signedBy(secret: string, header: string, body: string): boolean {
  const t = /(?:^|,)t=(\d+)/.exec(header)?.[1];
  const expected = createHmac('sha256', secret).update(`${t}.${body}`).digest('hex');
  return header.split(',').includes(`v1=${expected}`);
}

function newKeySecret(res: LightMyRequestResponse): string {
  const secret = /id="new-key" type="text" readonly value="([^"]+)"/.exec(res.body)?.[1];
  assert.ok(secret, `the new key is on the page: ${res.statusCode}`);
  return secret;
}

describe('promises: secrets stay out of the log (SECURITY.md, docs/configuration.md)', () => {
  it('logs no password, session cookie, session token or API key, even at trace', async () => {
    const log = captureLog();
    const t = await startApp({ env: { LOG_LEVEL: 'trace' }, logStream: log.stream });
    try {
      const password = 'a password nobody logs';
      const email = `logged-${randomUUID()}@example.com`;
      const visitor = new Visitor(t.app);
      assert.equal((await visitor.signUp(email, password)).statusCode, 303);
      const cookie = String(visitor.cookies.get('as_session'));
      const signed = decodeURIComponent(cookie);
      const token = signed.slice(0, signed.lastIndexOf('.'));
      await visitor.get('/portal/account');
      await visitor.get('/portal/keys');
      const key = newKeySecret(await visitor.post('/portal/keys', { name: 'logged?' }));
      assert.equal(
        (await t.app.inject({ url: '/v1/pets', headers: { authorization: `Bearer ${key}` } }))
          .statusCode,
        200,
      );
      const listed = await t.app.inject({
        url: '/v1/keys',
        headers: { authorization: basic(email, password) },
      });
      assert.equal(listed.statusCode, 200);
      assert.equal((await new Visitor(t.app).signIn(email, password)).statusCode, 303);

      const logged = log.text();
      assert.ok(logged.includes('"reqId"'), 'the log has request lines');
      for (const [what, secret] of [
        ['the password', password],
        ['the password, form-encoded', new URLSearchParams({ p: password }).toString().slice(2)],
        ['the Basic credentials', basic(email, password).slice(6)],
        ['the session cookie', cookie],
        ['the session token', token],
        ['the API key', key],
      ] as const) {
        assert.ok(!logged.includes(secret), `${what} is in the log`);
      }
    } finally {
      await t.close();
    }
  });
});

describe('promises: one app, as it runs by default', () => {
  let t: TestApp;
  const log = captureLog();
  before(async () => {
    t = await startApp({ env: { LOG_LEVEL: 'info' }, logStream: log.stream });
  });
  after(() => t.close());

  it('writes one JSON line per answered request at info, with its request id', async () => {
    const tenant = await newTenant(t.app);
    const answers = [
      await as(t.app, tenant, { url: '/v1/pets' }),
      await as(t.app, tenant, { url: '/v1/pets/999999' }),
      await t.app.inject({ url: '/v1/pets', remoteAddress: freshIp() }),
      await as(t.app, tenant, { method: 'POST', url: '/v1/categories', payload: { name: 'Logs' } }),
    ];
    const lines = log.lines();
    for (const res of answers) {
      const id = res.headers['x-request-id'];
      const mine = lines.filter((line) => line.reqId === id);
      assert.equal(mine.length, 1, `${res.statusCode}: ${JSON.stringify(mine)}`);
      assert.equal(mine[0]?.status, res.statusCode);
    }
  });

  it('sends no CORS headers to an origin no publishable key lists (.spectral.yaml)', async () => {
    const tenant = await newTenant(t.app);
    const origin = 'https://elsewhere.example';
    const answers = [
      await as(t.app, tenant, { url: '/v1/pets', headers: { origin } }),
      await t.app.inject({
        method: 'OPTIONS',
        url: '/v1/pets',
        headers: {
          origin,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization',
        },
        remoteAddress: freshIp(),
      }),
      await t.app.inject({ url: '/v1/openapi.json', headers: { origin } }),
    ];
    assert.equal(answers[0]?.statusCode, 200);
    assert.notEqual(answers[1]?.statusCode, 204, 'a preflight is not answered as allowed');
    for (const res of answers) {
      const cors = Object.keys(res.headers).filter((name) => name.startsWith('access-control-'));
      assert.deepEqual(cors, [], `${res.statusCode}`);
    }
  });

  it('counts each plan as the README says: Free, Pro, Business, and Enterprise as agreed', async () => {
    const tenant = await newTenant(t.app);
    const plans = [
      ['free', {}, { perMinute: 60, perDay: 1000 }],
      ['pro', {}, { perMinute: 300, perDay: 10_000 }],
      ['business', {}, { perMinute: 1000, perDay: 100_000 }],
      ['enterprise', { perMinute: 7000, perDay: 900_000 }, { perMinute: 7000, perDay: 900_000 }],
    ] as const;
    for (const [plan, custom, limits] of plans) {
      await planAccount(t.app, tenant.accountId, plan, custom);
      const res = await as(t.app, tenant, { url: '/v1/account' });
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json();
      assert.equal(body.plan, plan);
      assert.deepEqual(body.limits, limits);
      assert.equal(
        res.headers['ratelimit-policy'],
        `"minute";q=${limits.perMinute};w=60, "day";q=${limits.perDay};w=86400`,
      );
      // "the requests counted so far in the current windows (this request included)"
      assert.equal(res.headers['x-ratelimit-limit'], String(limits.perMinute));
      assert.equal(
        body.usage.minute,
        limits.perMinute - Number(res.headers['x-ratelimit-remaining']),
        'GET /v1/account counts itself',
      );
    }
  });

  it('gives accounts and keys random ids; messages a time, then 13 random characters', async () => {
    const accounts: string[] = [];
    for (let i = 0; i < 10; i++) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/v1/accounts',
        payload: { email: `random-${randomUUID()}@example.com`, password: 'long enough password' },
        remoteAddress: freshIp(),
      });
      assert.equal(res.statusCode, 201, res.body);
      accounts.push(res.json().id);
    }
    const tenant = await newTenant(t.app);
    const keys: string[] = [];
    const messages: string[] = [];
    for (let i = 0; i < 10; i++) {
      const key = await t.app.inject({
        method: 'POST',
        url: '/v1/keys',
        headers: { authorization: basic(tenant.email, tenant.password) },
      });
      assert.equal(key.statusCode, 201, key.body);
      keys.push(key.json().id);
      const message = await as(t.app, tenant, {
        method: 'POST',
        url: '/messages',
        payload: { message: `random ${i}` },
      });
      assert.equal(message.statusCode, 202, message.body);
      messages.push(message.json().id);
    }
    assert.ok(
      messages.every((id) => /^msg_[0-9A-Za-z]{20}$/.test(id)),
      messages.join(),
    );
    for (const [kind, ids, pattern] of [
      ['account', accounts, /^acct_[0-9A-Za-z]{16}$/],
      ['key', keys, /^key_[0-9A-Za-z]{16}$/],
      // A message id is 7 characters of the time it was made, then 13 random ones.
      ['message', messages.map((id) => id.slice(11)), /^[0-9A-Za-z]{13}$/],
    ] as const) {
      for (const id of ids) assert.match(id, pattern, kind);
      assert.equal(new Set(ids).size, ids.length, `${kind} ids are distinct`);
      // Ten made one after another, in sorted order: 1 chance in 10! were they random.
      assert.notDeepEqual(ids, [...ids].sort(), `${kind} ids follow the order they were made in`);
    }
  });

  it('keeps a deprecated operation announced at least 12 months before its sunset', async () => {
    const tenant = await newTenant(t.app);
    const pet = await createPet(t.app, tenant, {
      categoryId: (await createCategory(t.app, tenant)).id,
    });
    const res = await as(t.app, tenant, { url: `/v1/pets/${pet.id}` });
    assert.equal(res.statusCode, 200);
    const deprecated = Number(/^@(\d+)$/.exec(String(res.headers.deprecation))?.[1]) * 1000;
    const sunset = Date.parse(String(res.headers.sunset));
    assert.ok(Number.isFinite(deprecated) && Number.isFinite(sunset), JSON.stringify(res.headers));
    assert.ok(sunset - deprecated >= 365 * DAY, 'announced at least 12 months ahead');
    assert.equal(new Date(sunset).toISOString(), '2030-12-05T00:00:00.000Z');
  });

  it('changes a password in the portal and keeps the API keys working', async () => {
    const password = 'the first long password';
    const visitor = new Visitor(t.app);
    await visitor.signUp(`keys-stay-${randomUUID()}@example.com`, password);
    await visitor.get('/portal/keys');
    const key = newKeySecret(await visitor.post('/portal/keys', {}));
    await visitor.get('/portal/account');
    const changed = await visitor.post('/portal/account/password', {
      current_password: password,
      new_password: 'the second long password',
    });
    assert.equal(changed.statusCode, 200, changed.body);
    const res = await t.app.inject({
      url: '/v1/pets',
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(res.statusCode, 200, res.body);
  });

  it('holds at most 16 webhook endpoints, listed by id; the 17th is 409 too_many_webhooks', async () => {
    const tenant = await newTenant(t.app);
    const made: string[] = [];
    for (let i = 0; i < 16; i++) {
      made.push((await addEndpoint(t.app, tenant, `http://127.0.0.1:9/hook-${i}`)).id);
    }
    const refused = await as(t.app, tenant, {
      method: 'POST',
      url: '/v1/webhooks',
      payload: { url: 'http://127.0.0.1:9/one-too-many', events: ['*'] },
    });
    assert.equal(refused.statusCode, 409);
    assert.equal(errorCode(refused), 'too_many_webhooks');
    const listed = await as(t.app, tenant, { url: '/v1/webhooks' });
    assert.deepEqual(
      listed.json().map((endpoint: { id: string }) => endpoint.id),
      [...made].sort(),
    );
    const removed = await as(t.app, tenant, { method: 'DELETE', url: `/v1/webhooks/${made[3]}` });
    assert.equal(removed.statusCode, 204);
    await addEndpoint(t.app, tenant, 'http://127.0.0.1:9/room-again');
  });

  it('applies the server config: keep-alive, body and token bounds, timeouts in order', () => {
    assert.equal(t.app.server.keepAliveTimeout, 72_000, 'KEEP_ALIVE_TIMEOUT_SECONDS=72');
    assert.equal(loadConfig({ KEEP_ALIVE_TIMEOUT_SECONDS: '5' }).timeouts.keepAliveMs, 5000);
    assert.equal(loadConfig({ BODY_LIMIT: '1024' }).bodyLimit, 1024);
    assert.equal(loadConfig({ BODY_LIMIT: '16777216' }).bodyLimit, 16_777_216);
    for (const value of ['1023', '16777217']) {
      assert.throws(() => loadConfig({ BODY_LIMIT: value }), /BODY_LIMIT/);
    }
    assert.throws(
      () => loadConfig({ METRICS: 'token', METRICS_TOKEN: 'x'.repeat(15) }),
      /METRICS_TOKEN/,
    );
    assert.doesNotThrow(() => loadConfig({ METRICS: 'token', METRICS_TOKEN: 'x'.repeat(16) }));
    assert.throws(
      () => loadConfig({ HEADERS_TIMEOUT_SECONDS: '31', REQUEST_TIMEOUT_SECONDS: '30' }),
      /HEADERS_TIMEOUT_SECONDS/,
    );
  });
});

describe('promises: server keys rotate (.env.example, docs/configuration.md)', () => {
  it('SESSION_SECRET: the first signs, every one listed verifies, one dropped no longer does', async () => {
    const [s1, s2] = ['1'.repeat(32), '2'.repeat(32)];
    const a = await startApp({ env: { SESSION_SECRET: s1 }, ownStore: true });
    const same = { DATABASE_URL: a.databaseUrl };
    const b = await startApp({ env: { ...same, SESSION_SECRET: `${s2},${s1}` } });
    const c = await startApp({ env: { ...same, SESSION_SECRET: s2 } });
    try {
      const email = `rotate-${randomUUID()}@example.com`;
      const old = new Visitor(a.app);
      assert.equal((await old.signUp(email)).statusCode, 303);
      const account = (app: FastifyInstance, from: Visitor) => {
        const visitor = new Visitor(app);
        visitor.cookies.set('as_session', String(from.cookies.get('as_session')));
        return visitor.get('/portal/account');
      };
      assert.equal((await account(b.app, old)).statusCode, 200, 'an older secret still verifies');
      assert.equal((await account(c.app, old)).statusCode, 303, 'a dropped secret does not');
      const fresh = new Visitor(b.app);
      assert.equal((await fresh.signIn(email, 'a long enough password')).statusCode, 303);
      assert.equal((await account(c.app, fresh)).statusCode, 200, 'the first secret signs');
      assert.equal((await account(a.app, fresh)).statusCode, 303);
    } finally {
      await c.close();
      await b.close();
      await a.close();
    }
  });

  it('WEBHOOK_SECRET_KEY: the first seals, every one listed opens; unset, SESSION_SECRET serves', async () => {
    const [k1, k2] = ['k'.repeat(32), 'K'.repeat(32)];
    const receiver = await new Receiver().start();
    // The endpoint is made where only k1 is known, and delivered from where k2 came first.
    const a = await startApp({ env: { WEBHOOK_SECRET_KEY: k1, WORKER: 'off' }, ownStore: true });
    let b: TestApp | undefined;
    try {
      const tenant = await newTenant(a.app);
      const { id, secret } = await addEndpoint(a.app, tenant, `${receiver.url}/rotated`, [
        'pet.created',
      ]);
      await createPet(a.app, tenant, { categoryId: (await createCategory(a.app, tenant)).id });
      b = await startApp({
        env: { ...FAST, DATABASE_URL: a.databaseUrl, WEBHOOK_SECRET_KEY: `${k2},${k1}` },
      });
      const app = b.app;
      await until(
        async () => (await deliveries(app, tenant, id))[0]?.status === 'delivered',
        'the delivery, signed by the instance whose first key is k2',
      );
      const [got] = receiver.of('/rotated');
      assert.ok(
        got && signedBy(secret, got.signature, got.body),
        'signed with the secret k1 sealed',
      );

      // What b seals now opens with k2 alone, not with k1.
      const made = await addEndpoint(app, tenant, `${receiver.url}/sealed`);
      const row = await b.database.reader
        .selectFrom('webhook_endpoints')
        .select('secret')
        .where('id', '=', made.id)
        .executeTakeFirstOrThrow();
      assert.equal(new SecretBox([k2]).open(row.secret), made.secret);
      assert.equal(new SecretBox([k1]).open(row.secret), undefined);
      const old = await b.database.reader
        .selectFrom('webhook_endpoints')
        .select('secret')
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      assert.equal(new SecretBox([k2, k1]).open(old.secret), secret);
    } finally {
      await b?.close();
      await a.close();
      await receiver.close();
    }
    // Unset outside development: keys derived from SESSION_SECRET, rotated with it.
    const production = (sessionSecret: string) =>
      new SecretBox(
        loadConfig({
          APP_ENV: 'production',
          PUBLIC_BASE_URL: 'https://api.example.com/v1',
          MESSAGES_BASE_URL: 'https://messages.example.com',
          SESSION_SECRET: sessionSecret,
        }).webhooks.secretKeys,
      );
    const [s1, s2] = ['s'.repeat(32), 'S'.repeat(32)];
    const sealed = production(s1).seal('whsec_test');
    assert.equal(production(`${s2},${s1}`).open(sealed), 'whsec_test');
    assert.equal(production(s2).open(sealed), undefined);
  });
});

describe('promises: webhooks as documented', () => {
  let t: TestApp;
  let receiver: Receiver;
  before(async () => {
    // Failing endpoints are disabled after a second, not 3 days.
    t = await startApp({ env: { ...FAST, WEBHOOK_RETRY_FOR_SECONDS: '1' }, ownStore: true });
    receiver = await new Receiver().start();
  });
  after(async () => {
    await t.close();
    await receiver.close();
  });

  it('follows no redirect; an endpoint enabled again has its failures forgiven', async () => {
    const tenant = await newTenant(t.app);
    let moved = true;
    receiver.handle = (path, res) => {
      if (path !== '/moved' || !moved) return false;
      res.writeHead(302, { location: `${receiver.url}/elsewhere` }).end();
      return true;
    };
    const { id } = await addEndpoint(t.app, tenant, `${receiver.url}/moved`, ['pet.created']);
    const category = await createCategory(t.app, tenant);
    await createPet(t.app, tenant, { categoryId: category.id, name: 'Moved' });
    await until(
      async () => ((await deliveries(t.app, tenant, id))[0]?.lastStatusCode ?? null) !== null,
      'a first answer',
    );
    const [first] = await deliveries(t.app, tenant, id);
    assert.equal(first?.lastStatusCode, 302);
    assert.notEqual(first?.status, 'delivered');
    assert.equal(receiver.of('/elsewhere').length, 0, 'the redirect was not followed');

    // Failing past the retry period (1 s here), it is disabled, saying why.
    const endpoint = async () => (await as(t.app, tenant, { url: `/v1/webhooks/${id}` })).json();
    await until(async () => (await endpoint()).enabled === false, 'the endpoint disabled');
    const reason = String((await endpoint()).disabledReason);
    assert.match(reason, /fail/);
    assert.equal(receiver.of('/elsewhere').length, 0);
    // "an endpoint failing that long is disabled (the portal says so)"
    const visitor = new Visitor(t.app);
    assert.equal((await visitor.signIn(tenant.email, tenant.password)).statusCode, 303);
    const page = await visitor.get('/portal/webhooks');
    assert.match(page.body, /<strong>Disabled by the service:<\/strong> Every delivery failed/);

    // "Enabling again forgives its past failures": counted from the next failure on.
    moved = false;
    const enabled = await as(t.app, tenant, {
      method: 'PATCH',
      url: `/v1/webhooks/${id}`,
      payload: { enabled: true },
    });
    assert.equal(enabled.statusCode, 200, enabled.body);
    assert.equal(enabled.json().enabled, true);
    assert.equal(enabled.json().disabledReason, null);
    const row = await t.database.reader
      .selectFrom('webhook_endpoints')
      .select('failing_since')
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    assert.equal(row.failing_since, null);
    await createPet(t.app, tenant, { categoryId: category.id, name: 'Welcome back' });
    await until(
      async () => (await deliveries(t.app, tenant, id)).some((d) => d.status === 'delivered'),
      'a delivery to the endpoint enabled again',
    );
    assert.equal((await endpoint()).enabled, true);
  });

  it('tells the account when it disables an endpoint: an event to its others, and the account page', async () => {
    const tenant = await newTenant(t.app);
    receiver.handle = (path, res) => {
      if (path !== '/down') return false;
      res.writeHead(503).end('down');
      return true;
    };
    const down = await addEndpoint(t.app, tenant, `${receiver.url}/down`, ['pet.created']);
    await addEndpoint(t.app, tenant, `${receiver.url}/watching`, ['webhook_endpoint.disabled']);
    const category = await createCategory(t.app, tenant);
    await createPet(t.app, tenant, { categoryId: category.id, name: 'Unheard' });
    await until(
      async () => receiver.of('/watching').length > 0,
      'webhook_endpoint.disabled delivered to the other endpoint',
    );
    const told = JSON.parse(receiver.of('/watching')[0]?.body ?? '{}');
    assert.equal(told.type, 'webhook_endpoint.disabled');
    assert.equal(told.data.id, down.id);
    assert.equal(told.data.enabled, false);
    assert.match(told.data.disabledReason, /Every delivery failed/);
    const events = await as(t.app, tenant, { url: '/v1/events?type=webhook_endpoint.disabled' });
    assert.deepEqual(
      events.json().map((e: { data: { id: string } }) => e.data.id),
      [down.id],
    );
    // And the account page says so, not only the webhooks page.
    const visitor = new Visitor(t.app);
    assert.equal((await visitor.signIn(tenant.email, tenant.password)).statusCode, 303);
    const page = await visitor.get('/portal/account');
    assert.match(
      page.body,
      /The service disabled the webhook endpoint http:\/\/127\.0\.0\.1:\d+\/down: Every delivery failed/,
    );
    assert.match(page.body, new RegExp(`href="/portal/webhooks/${down.id}"`));
  });

  it('replays a secret rotation sent again with its key: the same secret, rotated once', async () => {
    const tenant = await newTenant(t.app);
    const { id, secret } = await addEndpoint(t.app, tenant, `${receiver.url}/rotated-once`, [
      'pet.created',
    ]);
    const rotate = () =>
      as(t.app, tenant, {
        method: 'POST',
        url: `/v1/webhooks/${id}/rotate-secret`,
        headers: { 'idempotency-key': `rotate-${id}` },
      });
    const first = await rotate();
    assert.equal(first.statusCode, 200, first.body);
    const again = await rotate();
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.json().secret, first.json().secret, 'the secret again');
    // Rotated twice, the original secret would sign no more.
    await as(t.app, tenant, { method: 'POST', url: `/v1/webhooks/${id}/test` });
    await until(() => receiver.of('/rotated-once').length === 1, 'the test event');
    const [got] = receiver.of('/rotated-once');
    assert.ok(got);
    assert.ok(signedBy(first.json().secret, got.signature, got.body));
    assert.ok(signedBy(secret, got.signature, got.body), 'the secret before the one rotation');
  });

  it('answers 409 delivery_in_progress to a retry of a delivery being sent', async () => {
    const tenant = await newTenant(t.app);
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    receiver.handle = (path, res) => {
      if (path !== '/held') return false;
      void held.then(() => res.writeHead(200).end('at last'));
      return true;
    };
    const { id } = await addEndpoint(t.app, tenant, `${receiver.url}/held`, ['pet.created']);
    await createPet(t.app, tenant, { categoryId: (await createCategory(t.app, tenant)).id });
    await until(() => receiver.of('/held').length === 1, 'the delivery on its way');
    const [sending] = await deliveries(t.app, tenant, id);
    assert.ok(sending);
    const refused = await as(t.app, tenant, {
      method: 'POST',
      url: `/v1/webhooks/${id}/deliveries/${sending.id}/retry`,
    });
    assert.equal(refused.statusCode, 409, refused.body);
    assert.equal(errorCode(refused), 'delivery_in_progress');
    release();
    await until(
      async () => (await deliveries(t.app, tenant, id))[0]?.status === 'delivered',
      'the held delivery settled',
    );
    const retried = await as(t.app, tenant, {
      method: 'POST',
      url: `/v1/webhooks/${id}/deliveries/${sending.id}/retry`,
    });
    assert.equal(retried.statusCode, 202, retried.body);
  });

  it('lists deliveries newest first in pages, each named by its event, sent once per endpoint', async () => {
    const tenant = await newTenant(t.app);
    const { id } = await addEndpoint(t.app, tenant, `${receiver.url}/log`, ['pet.created']);
    const category = await createCategory(t.app, tenant);
    for (const name of ['A', 'B', 'C'])
      await createPet(t.app, tenant, { categoryId: category.id, name });
    await until(
      async () =>
        (await deliveries(t.app, tenant, id)).filter((d) => d.status === 'delivered').length === 3,
      'three deliveries',
    );
    const events = (await as(t.app, tenant, { url: '/v1/events?type=pet.created' })).json();
    const newestFirst = events.map((event: { id: string }) => event.id).reverse();
    const paged: string[] = [];
    let url: string | undefined = `/v1/webhooks/${id}/deliveries?limit=2`;
    while (url) {
      const page = await as(t.app, tenant, { url });
      assert.equal(page.statusCode, 200, page.body);
      paged.push(...page.json().map((d: Delivery) => d.id));
      const next = nextLinkUrl(page);
      url = next && pathOf(next);
    }
    assert.deepEqual(paged, newestFirst);
    assert.equal(receiver.of('/log').length, 3, 'each event sent once');
  });

  it('sends a test event to the one endpoint asked, whatever the others want', async () => {
    const tenant = await newTenant(t.app);
    const one = await addEndpoint(t.app, tenant, `${receiver.url}/tested`, ['*']);
    const other = await addEndpoint(t.app, tenant, `${receiver.url}/untested`, ['*']);
    const sent = await as(t.app, tenant, { method: 'POST', url: `/v1/webhooks/${one.id}/test` });
    assert.equal(sent.statusCode, 202, sent.body);
    await until(() => receiver.of('/tested').length === 1, 'the test event');
    assert.equal(JSON.parse(receiver.of('/tested')[0]?.body ?? '').type, 'webhook.test');
    assert.deepEqual(await deliveries(t.app, tenant, other.id), []);
    assert.equal(receiver.of('/untested').length, 0);
  });

  it('gives pet.deleted the pet as it was before it was removed', async () => {
    const tenant = await newTenant(t.app);
    const category = await createCategory(t.app, tenant);
    const pet = await createPet(t.app, tenant, { categoryId: category.id, name: 'Last seen' });
    const changed = await as(t.app, tenant, {
      method: 'PATCH',
      url: `/v1/pets/${pet.id}`,
      payload: { status: 'pending' },
    });
    assert.equal(changed.statusCode, 200);
    assert.equal(
      (await as(t.app, tenant, { method: 'DELETE', url: `/v1/pets/${pet.id}` })).statusCode,
      204,
    );
    const [event] = (await as(t.app, tenant, { url: '/v1/events?type=pet.deleted' })).json();
    assert.deepEqual(event.data, changed.json());
  });
});

describe('promises: on a clock that stands still', () => {
  const clock = stillClock();
  let t: TestApp;
  let receiver: Receiver;
  before(async () => {
    t = await startApp({ clock, env: FAST });
    receiver = await new Receiver().start();
  });
  after(async () => {
    await t.close();
    await receiver.close();
  });

  it('limits sign-up per client address, with the Free numbers (.spectral.yaml)', async () => {
    clock.advance(MINUTE); // a minute of its own
    const ip = freshIp();
    for (let i = 1; i <= 60; i++) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/v1/accounts',
        payload: { email: 'not an email', password: 'long enough password' },
        remoteAddress: ip,
      });
      assert.equal(res.statusCode, 400, `sign-up ${i}`);
    }
    const refused = await t.app.inject({
      method: 'POST',
      url: '/v1/accounts',
      payload: { email: `limited-${randomUUID()}@example.com`, password: 'long enough password' },
      remoteAddress: ip,
    });
    assert.equal(refused.statusCode, 429, refused.body);
    assert.equal(errorCode(refused), 'rate_limited');
    assert.match(String(refused.headers['retry-after']), /^\d+$/);
    const elsewhere = await t.app.inject({
      method: 'POST',
      url: '/v1/accounts',
      payload: { email: `elsewhere-${randomUUID()}@example.com`, password: 'long enough password' },
      remoteAddress: freshIp(),
    });
    assert.equal(elsewhere.statusCode, 201, elsewhere.body);
  });

  it('scopes a sign-up Idempotency-Key to the client address, an IPv6 client to its /64', async () => {
    const key = randomUUID();
    const signUp = (remoteAddress: string, email: string) =>
      t.app.inject({
        method: 'POST',
        url: '/v1/accounts',
        headers: { 'idempotency-key': key },
        payload: { email, password: 'long enough password' },
        remoteAddress,
      });
    const email = `scoped-${randomUUID()}@example.com`;
    const first = await signUp('2001:db8:5:6::1', email);
    assert.equal(first.statusCode, 201, first.body);
    const sameBlock = await signUp('2001:db8:5:6:ffff::2', email);
    assert.equal(sameBlock.headers['idempotent-replayed'], 'true');
    assert.deepEqual(sameBlock.json(), first.json());
    const otherBlock = await signUp('2001:db8:5:7::1', email);
    assert.equal(otherBlock.headers['idempotent-replayed'], undefined);
    assert.equal(errorCode(otherBlock), 'email_taken');
    const other = await signUp(freshIp(), `scoped-${randomUUID()}@example.com`);
    assert.equal(other.statusCode, 201, 'another address with the same key is its own');
    assert.equal(other.headers['idempotent-replayed'], undefined);
  });

  it('lists the live keys oldest first', async () => {
    const tenant = await newTenant(t.app);
    const auth = { authorization: basic(tenant.email, tenant.password) };
    const made = [tenant.keyId];
    for (let i = 0; i < 6; i++) {
      clock.advance(1000);
      const key = await t.app.inject({ method: 'POST', url: '/v1/keys', headers: auth });
      assert.equal(key.statusCode, 201, key.body);
      made.push(key.json().id);
    }
    const listed = await t.app.inject({ url: '/v1/keys', headers: auth });
    assert.deepEqual(
      listed.json().map((key: { id: string }) => key.id),
      made,
    );
  });

  it('stamps a key’s last use again once a minute has passed', async () => {
    const tenant = await newTenant(t.app);
    const auth = { authorization: basic(tenant.email, tenant.password) };
    const lastUsed = async () =>
      (await t.app.inject({ url: '/v1/keys', headers: auth }))
        .json()
        .find((key: { id: string }) => key.id === tenant.keyId).lastUsedAt as string | null;
    await as(t.app, tenant, { url: '/v1/pets' });
    const first = clock.now().toISOString();
    await until(async () => (await lastUsed()) === first, 'the first stamp');
    clock.advance(MINUTE + 1000);
    await as(t.app, tenant, { url: '/v1/pets' });
    const second = clock.now().toISOString();
    await until(async () => (await lastUsed()) === second, 'the stamp a minute later');
  });

  it('signs with the old secret too for 24 hours after a rotation, then no more', async () => {
    const tenant = await newTenant(t.app);
    const { id, secret } = await addEndpoint(t.app, tenant, `${receiver.url}/day`, ['pet.created']);
    const rotated = await as(t.app, tenant, {
      method: 'POST',
      url: `/v1/webhooks/${id}/rotate-secret`,
    });
    const fresh = rotated.json().secret as string;
    const test = async (n: number) => {
      assert.equal(
        (await as(t.app, tenant, { method: 'POST', url: `/v1/webhooks/${id}/test` })).statusCode,
        202,
      );
      await until(() => receiver.of('/day').length === n, `test event ${n}`);
      return receiver.of('/day')[n - 1] as { body: string; signature: string };
    };
    clock.advance(DAY - MINUTE);
    const within = await test(1);
    assert.ok(signedBy(secret, within.signature, within.body), 'the old secret, within 24 h');
    assert.ok(signedBy(fresh, within.signature, within.body));
    clock.advance(2 * MINUTE);
    const past = await test(2);
    assert.ok(!signedBy(secret, past.signature, past.body), 'the old secret, after 24 h');
    assert.ok(signedBy(fresh, past.signature, past.body));
  });

  it('keeps events and the delivery log 30 days, then deletes them', async () => {
    const tenant = await newTenant(t.app);
    const { id } = await addEndpoint(t.app, tenant, `${receiver.url}/kept`, ['pet.created']);
    await createPet(t.app, tenant, { categoryId: (await createCategory(t.app, tenant)).id });
    await until(
      async () => (await deliveries(t.app, tenant, id))[0]?.status === 'delivered',
      'the delivery',
    );
    const events = async () => (await as(t.app, tenant, { url: '/v1/events' })).json().length;
    assert.equal(await events(), 1);
    clock.advance(30 * DAY - MINUTE);
    assert.equal(await events(), 1, 'kept for 30 days');
    assert.equal((await deliveries(t.app, tenant, id)).length, 1);
    clock.advance(2 * MINUTE);
    assert.equal(await events(), 0, 'no longer listed after 30 days');
    const deleted = await t.app.ctx.housekeeping.runOnce();
    assert.ok(deleted.events >= 1, JSON.stringify(deleted));
    assert.ok((deleted['webhook deliveries'] ?? 0) >= 1, JSON.stringify(deleted));
    assert.deepEqual(await deliveries(t.app, tenant, id), []);
  });
});

describe('promises: outside development', () => {
  it('gives staging as_test_ keys, and refuses a production key there', async () => {
    const t = await startApp({
      env: {
        APP_ENV: 'staging',
        STAGING_BASE_URL: 'https://staging.example.com/v1',
        MESSAGES_BASE_URL: 'https://staging.example.com',
        SESSION_SECRET: 'a'.repeat(32),
      },
      ownStore: true,
    });
    const production = await startApp({
      env: {
        DATABASE_URL: t.databaseUrl,
        APP_ENV: 'production',
        PUBLIC_BASE_URL: 'https://api.example.com/v1',
        MESSAGES_BASE_URL: 'https://messages.example.com',
        SESSION_SECRET: 'a'.repeat(32),
      },
    });
    try {
      const tenant = await newTenant(t.app);
      assert.match(tenant.key, /^as_test_[0-9A-Za-z]{40}$/);
      assert.equal((await as(t.app, tenant, { url: '/v1/pets' })).statusCode, 200);
      const live = await production.app.inject({
        method: 'POST',
        url: '/v1/keys',
        headers: { authorization: basic(tenant.email, tenant.password) },
      });
      assert.match(live.json().key, /^as_live_/);
      const refused = await t.app.inject({
        url: '/v1/pets',
        headers: { authorization: `Bearer ${live.json().key}` },
      });
      assert.equal(refused.statusCode, 401);
      assert.equal(errorCode(refused), 'invalid_api_key');
    } finally {
      await production.close();
      await t.close();
    }
  });
});

describe('promises: a message not yet settled', () => {
  it('shows its webhook deliveries as all zero, though an endpoint wants its event', async () => {
    const t = await startApp({ env: { WORKER: 'off' }, ownStore: true });
    try {
      const tenant = await newTenant(t.app);
      await addEndpoint(t.app, tenant, 'http://127.0.0.1:9/wants-it', ['message.sent']);
      const sent = await as(t.app, tenant, {
        method: 'POST',
        url: '/messages',
        payload: { message: 'waiting' },
      });
      assert.equal(sent.statusCode, 202, sent.body);
      const record = (await as(t.app, tenant, { url: `/messages/${sent.json().id}` })).json();
      assert.equal(record.status, 'queued');
      assert.deepEqual(record.webhooks, { pending: 0, delivered: 0, failed: 0 });
    } finally {
      await t.close();
    }
  });
});

describe('promises: a message that cannot be delivered', () => {
  it('ends failed, with its message.failed event', async () => {
    // Where messages go refuses every one (the default sink, the log, cannot).
    const refusing: MessageSink = {
      deliver: async () => {
        throw new Error('the destination is closed');
      },
    };
    const t = await startApp({
      sink: refusing,
      env: { MESSAGE_MAX_ATTEMPTS: '1' },
      ownStore: true,
    });
    try {
      const tenant = await newTenant(t.app);
      const sent = await as(t.app, tenant, {
        method: 'POST',
        url: '/messages',
        payload: { message: 'nobody takes this' },
      });
      assert.equal(sent.statusCode, 202, sent.body);
      const id = sent.json().id as string;
      await until(
        async () =>
          (await as(t.app, tenant, { url: `/messages/${id}` })).json().status === 'failed',
        'the message failed',
      );
      const events = (await as(t.app, tenant, { url: '/v1/events?type=message.failed' })).json();
      assert.equal(events.length, 1);
      assert.equal(events[0].data.id, id);
      assert.equal(events[0].data.status, 'failed');
      assert.match(events[0].data.failureReason, /the destination is closed/);
    } finally {
      await t.close();
    }
  });
});

describe('promises: operations (README "Running in production", .env.example)', () => {
  it('counts an outage of the database in /metrics while it answers 503', async () => {
    // Nothing listens on port 1: every query is refused at once.
    const config = loadConfig({
      DATABASE_URL: 'postgres://app:unused@127.0.0.1:1/nowhere',
      LOG_LEVEL: 'silent',
      DEMO_ACCOUNT: 'false',
    });
    const database = openDatabase(config.databaseUrl, { poolSize: 1 });
    const app = await buildApp({ config, database });
    try {
      const res = await app.inject({
        url: '/v1/pets',
        headers: { authorization: `Bearer as_test_${'x'.repeat(40)}` },
      });
      assert.equal(res.statusCode, 503, res.body);
      const metrics = await app.inject({ url: '/metrics' });
      assert.match(metrics.body, /^dependency_outages_total\{dependency="database"\} 1$/m);
    } finally {
      await app.close();
      await database.close();
    }
  });

  it('waits MESSAGE_RETRY_BASE_MS before a second attempt, doubled each time, ±20%', () => {
    const policy = { maxAttempts: 5, retryBaseMs: 1000 };
    for (let attempt = 1; attempt <= 4; attempt++) {
      const base = 1000 * 2 ** (attempt - 1);
      for (let i = 0; i < 50; i++) {
        const delay = retryDelayMs(policy, attempt);
        assert.ok(delay >= base * 0.8 && delay <= base * 1.2, `attempt ${attempt}: ${delay}`);
      }
    }
  });
});

describe('promises: PostgreSQL and Redis settings', () => {
  const pgUrl = process.env.TEST_DATABASE_URL;
  const redisUrl = process.env.TEST_REDIS_URL;

  it('cancels a statement that runs past DATABASE_STATEMENT_TIMEOUT_MS', {
    skip: !pgUrl && 'needs TEST_DATABASE_URL',
  }, async () => {
    const database = openDatabase(pgUrl as string, { poolSize: 1, statementTimeoutMs: 100 });
    try {
      await assert.rejects(sql`select pg_sleep(2)`.execute(database.reader), /statement timeout/);
      assert.equal(
        loadConfig({ DATABASE_STATEMENT_TIMEOUT_MS: '100' }).databaseStatementTimeoutMs,
        100,
      );
    } finally {
      await database.close();
    }
  });

  it('puts REDIS_KEY_PREFIX before every Redis key it writes', {
    skip: !redisUrl && 'needs TEST_REDIS_URL',
  }, async () => {
    // A Redis database of this test's own, where every key must carry one of its prefixes.
    const url = new URL(redisUrl as string);
    url.pathname = '/9';
    const prefix = `promises-${randomUUID()}:`;
    const t = await startApp({ env: { REDIS_URL: url.href, REDIS_KEY_PREFIX: prefix } });
    const redis = new Redis(url.href);
    try {
      const tenant = await newTenant(t.app);
      await as(t.app, tenant, { method: 'POST', url: '/messages', payload: { message: 'hi' } });
      await t.app.inject({ url: '/v1/pets', remoteAddress: freshIp() });
      await t.app.inject({
        url: '/v1/keys',
        headers: { authorization: basic(tenant.email, 'a wrong password') },
      });
      const keys = await redis.keys('*');
      assert.ok(
        keys.some((key) => key.startsWith(prefix)),
        'it wrote keys',
      );
      assert.deepEqual(
        keys.filter((key) => !key.startsWith('promises-')),
        [],
        'every key carries a prefix',
      );
    } finally {
      redis.disconnect();
      await t.close();
    }
  });
});
