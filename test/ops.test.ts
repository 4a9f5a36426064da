import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { request } from 'node:http';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfig } from '../src/config.js';
import { nothingKept } from '../src/http/freshness.js';
import { startMetricsServer } from '../src/ops/metrics-server.js';
import { openDatabase, SchemaMismatchError } from '../src/store/database.js';
import {
  as,
  captureLog,
  createCategory,
  createPet,
  databaseOfItsOwn,
  errorCode,
  newTenant,
  PRODUCTION_ENV,
  startApp,
  type TestApp,
  until,
} from './helpers.js';

/** A sample's value in Prometheus text, or undefined when the series is absent. */
function sample(
  text: string,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const match = /^([a-z_]+)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found = Object.fromEntries(
      [...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]),
    );
    if (Object.entries(labels).every(([k, v]) => found[k] === v)) return Number(match[3]);
  }
  return undefined;
}

/** A tenant, made while the app serves (the lifecycle is only flipped back afterwards), once
 * Redis answers, as src/server.ts waits for it. */
async function newTenantWhenServing(t: TestApp) {
  await t.app.ready();
  assert.ok(await t.app.ctx.outages.untilAnswers('redis'));
  t.app.ctx.lifecycle.serve();
  return newTenant(t.app);
}

describe('health and readiness', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp();
  });
  after(() => t.close());

  it('answers /healthz and /readyz without a key, uncounted', async () => {
    const health = await t.app.inject({ url: '/healthz' });
    assert.equal(health.statusCode, 200);
    assert.deepEqual(health.json(), { status: 'ok' });
    assert.equal(health.headers['x-ratelimit-limit'], undefined);
    const ready = await t.app.inject({ url: '/readyz' });
    assert.equal(ready.statusCode, 200);
    const expected: Record<string, string> = { database: 'ok' };
    if (process.env.TEST_REDIS_URL) expected.redis = 'ok';
    assert.deepEqual(ready.json(), { status: 'ready', checks: expected });
    // A hundred probes, past the anonymous per-IP limit of 60, cost the client nothing.
    for (let i = 0; i < 100; i++) await t.app.inject({ url: '/readyz' });
    const signUp = await t.app.inject({
      method: 'POST',
      url: '/v1/accounts',
      payload: { email: `probe-${randomUUID()}@example.com`, password: 'long enough password' },
    });
    assert.equal(signUp.statusCode, 201);
  });

  it('turns /readyz to 503 while shutting down, /healthz staying 200', async () => {
    t.app.ctx.lifecycle.draining = true;
    try {
      const ready = await t.app.inject({ url: '/readyz' });
      assert.equal(ready.statusCode, 503);
      assert.equal(errorCode(ready), 'service_unavailable');
      assert.deepEqual(ready.json().details[0], { location: 'process', message: 'shutting down' });
      assert.equal((await t.app.inject({ url: '/healthz' })).statusCode, 200);
    } finally {
      t.app.ctx.lifecycle.draining = false;
    }
  });

  it('answers 503 to the API while starting, serving health, readiness and the docs', async () => {
    const starting = await startApp({ startLater: true });
    try {
      const tenant = await newTenantWhenServing(starting);
      starting.app.ctx.lifecycle.starting = true;
      const pets = await as(starting.app, tenant, { url: '/v1/pets' });
      assert.equal(pets.statusCode, 503);
      assert.equal(errorCode(pets), 'service_unavailable');
      assert.equal(pets.headers['retry-after'], '1');
      const ready = await starting.app.inject({ url: '/readyz' });
      assert.equal(ready.statusCode, 503);
      assert.equal(ready.json().details[0].location, 'process');
      for (const url of ['/healthz', '/v1/openapi.json', '/docs/']) {
        assert.equal((await starting.app.inject({ url })).statusCode, 200, url);
      }
      // What the server does once its dependencies answer and the schema is current.
      starting.app.ctx.lifecycle.starting = false;
      assert.equal((await as(starting.app, tenant, { url: '/v1/pets' })).statusCode, 200);
      assert.equal((await starting.app.inject({ url: '/readyz' })).statusCode, 200);
    } finally {
      await starting.close();
    }
  });

  it('names the database when it does not answer, while /healthz stays 200', async () => {
    const broken = await startApp();
    try {
      await broken.database.close();
      const ready = await broken.app.inject({ url: '/readyz' });
      assert.equal(ready.statusCode, 503);
      assert.equal(errorCode(ready), 'service_unavailable');
      assert.match(ready.json().message, /database/);
      assert.equal(ready.json().details[0].location, 'database');
      assert.equal((await broken.app.inject({ url: '/healthz' })).statusCode, 200);
    } finally {
      await broken.app.close();
    }
  });
});

describe('metrics', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp();
  });
  after(() => t.close());

  it('counts requests by route pattern and status, with latency', async () => {
    const tenant = await newTenant(t.app);
    await as(t.app, tenant, { url: '/v1/pets' });
    await as(t.app, tenant, { url: '/v1/pets/424242' });
    await t.app.inject({ url: `/nowhere/${randomUUID()}` });
    const res = await t.app.inject({ url: '/metrics' });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    const text = res.body;
    const route = { method: 'GET', route: '/v1/pets', status: '200' };
    assert.ok((sample(text, 'http_requests_total', route) ?? 0) >= 1);
    assert.ok((sample(text, 'http_request_duration_seconds_count', route) ?? 0) >= 1);
    const notFound = { method: 'GET', route: '/v1/pets/:petId', status: '404' };
    assert.equal(sample(text, 'http_requests_total', notFound), 1);
    // Unknown URLs share one series: clients cannot mint new ones.
    assert.equal(sample(text, 'http_requests_total', { route: 'unmatched', status: '404' }), 1);
    assert.doesNotMatch(text, /nowhere/);
    assert.ok(sample(text, 'process_resident_memory_bytes') !== undefined);
  });

  it("counts each cache's hits, misses and entries", async () => {
    const tenant = await newTenant(t.app);
    const scrape = async () => (await t.app.inject({ url: '/metrics' })).body;
    const before = await scrape();
    const pages = { cache: 'pages' };
    const hitsBefore = sample(before, 'cache_hits_total', pages) ?? 0;
    const missesBefore = sample(before, 'cache_misses_total', pages) ?? 0;
    const url = `/v1/categories?limit=7`;
    for (let i = 0; i < 3; i++) assert.equal((await as(t.app, tenant, { url })).statusCode, 200);
    const text = await scrape();
    // PostgreSQL alone keeps no pages: every read is a read.
    const kept = t.app.ctx.freshness !== nothingKept;
    assert.equal(sample(text, 'cache_misses_total', pages), missesBefore + (kept ? 1 : 0));
    assert.equal(sample(text, 'cache_hits_total', pages), hitsBefore + (kept ? 2 : 0));
    assert.ok((sample(text, 'cache_entries', { cache: 'keys' }) ?? 0) >= 1);
    assert.ok((sample(text, 'cache_hits_total', { cache: 'keys' }) ?? 0) >= 2);
    assert.ok(sample(text, 'cache_evictions_total', pages) !== undefined);
    // The limiter's windows, kept per key between the turns of its windows.
    assert.ok((sample(text, 'cache_hits_total', { cache: 'limit windows' }) ?? 0) >= 2);
  });

  it('counts rate-limit refusals, deprecated calls, message outcomes and the queue depth', async () => {
    const free = await newTenant(t.app, { plan: 'free' });
    for (let i = 0; i < 62; i++) await as(t.app, free, { url: '/v1/categories' });
    const before = (await t.app.inject({ url: '/metrics' })).body;
    const deprecatedBefore = sample(before, 'deprecated_calls_total', { operation: 'getPet' }) ?? 0;
    const tenant = await newTenant(t.app);
    const category = await createCategory(t.app, tenant);
    const pet = await createPet(t.app, tenant, { categoryId: category.id });
    await as(t.app, tenant, { url: `/v1/pets/${pet.id}` });
    const posted = await as(t.app, tenant, {
      method: 'POST',
      url: '/messages',
      payload: { message: 'metrics' },
    });
    assert.equal(posted.statusCode, 202);
    let text = '';
    for (let i = 0; i < 100; i++) {
      text = (await t.app.inject({ url: '/metrics' })).body;
      if ((sample(text, 'messages_processed_total', { outcome: 'sent' }) ?? 0) >= 1) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok((sample(text, 'rate_limit_rejections_total', { reason: 'rate_limited' }) ?? 0) >= 2);
    assert.equal(
      sample(text, 'deprecated_calls_total', { operation: 'getPet' }),
      deprecatedBefore + 1,
    );
    assert.equal(sample(text, 'messages_processed_total', { outcome: 'sent' }), 1);
    assert.equal(sample(text, 'messages_queue_depth'), 0);
    const pool = sample(text, 'db_pool_connections', { state: 'idle' });
    assert.equal(pool !== undefined, t.database.dialect === 'postgres');
  });
});

describe('metrics exposure', () => {
  it('is off by default in production, and in any mode off the public port', async () => {
    const production = PRODUCTION_ENV;
    const envs: Array<Record<string, string>> = [
      production,
      { METRICS: 'off' },
      { METRICS: 'port', METRICS_PORT: '0' },
    ];
    for (const env of envs) {
      const t = await startApp({ env });
      try {
        const res = await t.app.inject({ url: '/metrics' });
        assert.equal(res.statusCode, 404, JSON.stringify(env));
        assert.equal(errorCode(res), 'route_not_found');
      } finally {
        await t.close();
      }
    }
  });

  it('asks for the token when METRICS=token', async () => {
    const token = 'a-metrics-token-of-some-length';
    const t = await startApp({ env: { METRICS: 'token', METRICS_TOKEN: token } });
    try {
      const none = await t.app.inject({ url: '/metrics' });
      assert.equal(none.statusCode, 401);
      assert.equal(errorCode(none), 'missing_credentials');
      const wrong = await t.app.inject({
        url: '/metrics',
        headers: { authorization: `Bearer ${token}x` },
      });
      assert.equal(wrong.statusCode, 401);
      const right = await t.app.inject({
        url: '/metrics',
        headers: { authorization: `Bearer ${token}` },
      });
      assert.equal(right.statusCode, 200);
      assert.match(right.body, /http_requests_total/);
    } finally {
      await t.close();
    }
  });

  it('serves them on a port of its own when METRICS=port', async () => {
    const t = await startApp({ env: { METRICS: 'port', METRICS_PORT: '0' } });
    const served = await startMetricsServer(t.app.ctx.metrics, '127.0.0.1', 0);
    try {
      await t.app.inject({ url: '/healthz' });
      const res = await fetch(served.url);
      assert.equal(res.status, 200);
      assert.match(await res.text(), /route="\/healthz"/);
      const other = await fetch(served.url.replace('/metrics', '/v1/pets'));
      assert.equal(other.status, 404);
    } finally {
      await served.close();
      await t.close();
    }
  });

  it('refuses METRICS=token without a token and METRICS=port without a port', () => {
    assert.throws(() => loadConfig({ METRICS: 'token' }), /METRICS_TOKEN/);
    assert.throws(() => loadConfig({ METRICS: 'token', METRICS_TOKEN: 'short' }), /METRICS_TOKEN/);
    assert.throws(() => loadConfig({ METRICS: 'port' }), /METRICS_PORT/);
    assert.throws(() => loadConfig({ METRICS: 'everywhere' }), /METRICS/);
  });
});

describe('migrations', () => {
  it('run from several processes at once, each finding the schema current afterwards', async () => {
    // A database of its own, so that "fresh" means fresh on PostgreSQL too.
    const fresh = await databaseOfItsOwn();
    const handles = [1, 2, 3].map(() => openDatabase(fresh.url, { poolSize: 2 }));
    try {
      const applied = await Promise.all(handles.map((database) => database.schema.migrate()));
      assert.equal(applied.flat().length, applied.find((a) => a.length > 0)?.length);
      for (const database of handles) await database.schema.assertCurrent();
    } finally {
      for (const database of handles) await database.close();
      await fresh.drop();
    }
  });

  it('refuses a database migrated by newer code, and a start that would need a migration', async () => {
    const fresh = await databaseOfItsOwn();
    const database = openDatabase(fresh.url, { poolSize: 2 });
    try {
      await assert.rejects(database.schema.assertCurrent(), (err: Error) => {
        assert.ok(err instanceof SchemaMismatchError);
        assert.match(err.message, /animal-store migrate/);
        return true;
      });
      await database.schema.migrate();
      await database.write((tx) =>
        tx
          .insertInto('kysely_migration' as never)
          .values({ name: '9999_from_the_future', timestamp: new Date().toISOString() } as never)
          .execute(),
      );
      for (const attempt of [database.schema.migrate(), database.schema.assertCurrent()]) {
        await assert.rejects(attempt, (err: Error) => {
          assert.ok(err instanceof SchemaMismatchError);
          assert.match(err.message, /newer than this version.*9999_from_the_future/s);
          return true;
        });
      }
    } finally {
      await database.close();
      await fresh.drop();
    }
  });
});

describe('shutting down', () => {
  /** An app on the real database whose writes, once `hold` is called, wait until released: a
   * request is still being handled when the server is closed. */
  async function heldApp(
    logStream: { write(line: string): void },
    env: Record<string, string> = {},
  ) {
    let gate: Promise<void> | undefined;
    let reached = () => {};
    const t = await startApp({
      ownStore: true,
      env: { LOG_LEVEL: 'warn', ...env },
      logStream,
      wrapDatabase: (database) => ({
        ...database,
        write: async (work, options) => {
          if (gate) {
            reached();
            await gate;
          }
          return database.write(work, options);
        },
      }),
    });
    // Once the request log has written what it holds: no write of its own is held instead.
    const hold = async () => {
      await t.app.requestLog.flush();
      let release!: () => void;
      const held = new Promise<void>((resolve) => {
        reached = resolve;
      });
      gate = new Promise((resolve) => {
        release = resolve;
      });
      return { held, release };
    };
    return { t, hold };
  }

  it('closes the stores only once every request is answered, one whose client left too', async () => {
    const log = captureLog();
    const { t, hold } = await heldApp(log.stream);
    try {
      const tenant = await newTenant(t.app);
      const category = await createCategory(t.app, tenant, 'Late');
      const { held, release } = await hold();
      const base = await t.app.listen({ port: 0, host: '127.0.0.1' });
      const client = request(`${base}/v1/pets`, {
        method: 'POST',
        headers: { ...tenant.headers, 'content-type': 'application/json' },
      });
      client.on('error', () => {});
      client.end(JSON.stringify({ name: 'Late', categoryId: category.id }));
      await held;
      client.destroy();
      await until(
        () => new Promise((resolve) => t.app.server.getConnections((_err, n) => resolve(n === 0))),
        'the client to go away',
      );

      let closed = false;
      const closing = t.app.close().then(() => {
        closed = true;
      });
      await sleep(100);
      assert.equal(closed, false, 'closed while a request was still being answered');
      release();
      await closing;
      // As src/server.ts does once the app is closed.
      await t.database.close();

      assert.deepEqual(
        log.lines().filter((line) => Number(line.level) >= 50),
        [],
        'no request met a closed store',
      );
      const check = openDatabase(t.databaseUrl, { poolSize: 1 });
      try {
        const kept = await check.reader
          .selectFrom('pets')
          .select('name')
          .where('account_id', '=', tenant.accountId)
          .where('name', '=', 'Late')
          .execute();
        assert.equal(kept.length, 1, 'the write its client never heard of is kept');
      } finally {
        await check.close();
      }
    } finally {
      await t.close();
    }
  });

  it('gives up on a request held forever past its deadline, says so, and refuses its write', {
    timeout: 20_000,
  }, async () => {
    const log = captureLog();
    // No worker: its writes would be held forever too, and it waits for them as it closes.
    // Half of the shortest shutdown deadline (1 s) goes to requests being answered.
    const { t, hold } = await heldApp(log.stream, { WORKER: 'off', SHUTDOWN_TIMEOUT_SECONDS: '1' });
    try {
      const tenant = await newTenant(t.app);
      const category = await createCategory(t.app, tenant, 'Forever');
      const { held, release } = await hold();
      const post = as(t.app, tenant, {
        method: 'POST',
        url: '/v1/pets',
        payload: { name: 'Forever', categoryId: category.id },
      });
      await held;
      // As src/server.ts does on SIGTERM.
      t.app.ctx.lifecycle.drain();
      await t.app.close();
      await t.database.close();
      const gaveUp = log
        .lines()
        .filter(
          (line) => line.msg === 'shutdown: gave up waiting for requests still being answered',
        );
      assert.deepEqual(
        gaveUp.map((line) => [line.level, line.requests]),
        [[40, 1]],
      );

      // The handler goes on after all: its write meets a closed database, and is refused.
      release();
      const res = await post;
      assert.equal(res.statusCode, 503, res.body);
      assert.equal(errorCode(res), 'service_unavailable');
      assert.match(res.json().message, /nothing was changed/);
      // Nothing met a closed database. (Redis, when used, closed before it too: that is said
      // as Redis being away.)
      assert.deepEqual(
        log.lines().filter((line) => Number(line.level) >= 50 && line.dependency !== 'redis'),
        [],
      );
    } finally {
      await t.close();
    }
  });

  it("serves a request arriving on an open connection while closing, not Fastify's 503", async () => {
    const log = captureLog();
    const { t, hold } = await heldApp(log.stream);
    try {
      const tenant = await newTenant(t.app);
      const category = await createCategory(t.app, tenant, 'Late');
      const { held, release } = await hold();
      const { port } = new URL(await t.app.listen({ port: 0, host: '127.0.0.1' }));
      const socket = connect(Number(port), '127.0.0.1');
      let answers = '';
      socket.setEncoding('utf8').on('data', (chunk: string) => {
        answers += chunk;
      });
      const gone = once(socket, 'close');
      const body = JSON.stringify({ name: 'Late', categoryId: category.id });
      const head = `Host: 127.0.0.1\r\nAuthorization: ${tenant.headers.authorization}\r\n`;
      socket.write(
        `POST /v1/pets HTTP/1.1\r\n${head}Content-Type: application/json\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
      await held;
      // The server closes while the POST holds its connection open; a GET follows on it.
      const closing = t.app.close();
      await until(() => !t.app.server.listening, 'the listener to close');
      socket.write(`GET /v1/pets?limit=1 HTTP/1.1\r\n${head}\r\n`);
      await sleep(50);
      release();
      await closing;
      await gone;

      const [post, get] = answers.split(/(?=HTTP\/1\.1 \d{3} )/);
      assert.match(post ?? '', /^HTTP\/1\.1 201 /);
      assert.match(get ?? '', /^HTTP\/1\.1 200 /, 'served, not refused');
      assert.match(get ?? '', /^connection: close\r$/im);
      // The page (empty, or the pet once let through): a list, not an Error.
      assert.match(get ?? '', /\r\n\r\n\[.*\]$/s);
    } finally {
      await t.close();
    }
  });
});
