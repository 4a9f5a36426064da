/**
 * Faults one instance must live through (`npm run test:cluster`, also run by .ci/run): its
 * PostgreSQL connections terminated under load, PostgreSQL stopped and started again, and the
 * instance started before its PostgreSQL and Redis. Each instance is the compiled service in a
 * process of its own, on a private PostgreSQL and Redis (harness.ts), since the faults are
 * those of real servers.
 */
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import {
  cli,
  cliKey,
  Instance,
  instanceEnv,
  Postgres,
  Redis,
  unlimited,
  until,
} from './harness.js';

/** The log lines an instance wrote, parsed (a line still being read left out). */
function logLines(instance: Instance): Array<{ level: number; msg: string }> {
  return instance.log
    .split('\n')
    .filter((line) => line.startsWith('{') && line.endsWith('}'))
    .map((line) => JSON.parse(line));
}

describe('one instance when PostgreSQL fails', () => {
  let postgres: Postgres;
  let redis: Redis;
  let env: Record<string, string>;
  let admin: pg.Client;
  let key: string;
  const instances: Instance[] = [];

  before(async () => {
    assert.ok(
      existsSync('dist/server.js'),
      'run `npm run build` first (npm run test:cluster does)',
    );
    postgres = await Postgres.create();
    redis = await Redis.create();
    env = instanceEnv(postgres.url, redis.url);
    cli(env, 'migrate');
    const email = `faults-${randomUUID()}@example.com`;
    cli(env, 'accounts', 'create', '--email', email, '--password', 'a faults test password');
    unlimited(env, email);
    key = cliKey(env, email);
  });

  after(async () => {
    for (const instance of instances) instance.kill('SIGKILL');
    await admin?.end().catch(() => {});
    await redis?.destroy();
    postgres?.destroy();
  });

  const call = (instance: Instance, path: string, init: RequestInit = {}) =>
    fetch(`${instance.base}${path}`, {
      ...init,
      headers: {
        authorization: `Bearer ${key}`,
        ...(init.body !== undefined && { 'content-type': 'application/json' }),
      },
    });

  it('lives through its connections being terminated under load: no 500, nothing acknowledged lost', async () => {
    const instance = await Instance.start('terminated', env);
    instances.push(instance);
    const category = await call(instance, '/v1/categories', {
      method: 'POST',
      body: JSON.stringify({ name: 'Survivors' }),
    });
    assert.equal(category.status, 201);
    const { id: categoryId } = (await category.json()) as { id: number };

    admin = new pg.Client({ connectionString: postgres.url });
    admin.on('error', () => {});
    await admin.connect();
    const statuses = new Map<number, number>();
    const acknowledged: number[] = [];
    let loading = true;
    // 48 connections writing pets, as the 64-connection load did on a 2-core machine.
    const loops = Array.from({ length: 48 }, async (_, i) => {
      while (loading) {
        const res = await call(instance, '/v1/pets', {
          method: 'POST',
          body: JSON.stringify({ name: `pet ${i}`, categoryId }),
        });
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        const body = (await res.json()) as { id?: number; code?: string; status?: number };
        if (res.status === 201 && body.id !== undefined) acknowledged.push(body.id);
        else {
          assert.equal(res.status, 503, JSON.stringify(body));
          // A connection cut during COMMIT: the pet may be stored (outcome_unknown).
          assert.ok(['service_unavailable', 'outcome_unknown'].includes(String(body.code)));
          assert.equal(res.headers.get('retry-after'), '1');
        }
      }
    });
    // The fault is racy (a connection dropped while it is lent out, between queries): repeat it.
    let terminated = 0;
    for (let round = 0; round < 8; round++) {
      await new Promise((r) => setTimeout(r, 400));
      const { rows } = await admin.query(
        'select count(pg_terminate_backend(pid))::int as n from pg_stat_activity ' +
          'where datname = current_database() and pid <> pg_backend_pid()',
      );
      terminated += rows[0].n;
    }
    await new Promise((r) => setTimeout(r, 400));
    loading = false;
    await Promise.all(loops);

    assert.equal(instance.child.exitCode, null, `the instance exited:\n${instance.log}`);
    assert.ok(terminated >= 8, `only ${terminated} connections were terminated`);
    assert.deepEqual(
      [...statuses.keys()].filter((s) => s !== 201 && s !== 503),
      [],
      `unexpected statuses: ${JSON.stringify([...statuses])}`,
    );
    assert.ok((statuses.get(201) ?? 0) > 100, `too few writes: ${JSON.stringify([...statuses])}`);
    // Ids are numbered per account: the account is the key's.
    const { rows } = await admin.query(
      'select p.id from pets p join api_keys k on k.account_id = p.account_id ' +
        'where k.hash = $2 and p.id = any($1)',
      [acknowledged, createHash('sha256').update(key).digest('hex')],
    );
    assert.equal(rows.length, acknowledged.length, 'an acknowledged pet is missing');
    assert.equal((await call(instance, '/readyz')).status, 200);
    assert.doesNotMatch(instance.log, /Unhandled|uncaught/i);
  });

  it('answers 503 with Retry-After while PostgreSQL is stopped, logs the outage once, and recovers', async () => {
    const instance = await Instance.start('stopped', env);
    instances.push(instance);
    assert.equal((await call(instance, '/v1/pets')).status, 200);
    const linesBefore = logLines(instance).length;

    postgres.stop();
    let refused = 0;
    try {
      const end = Date.now() + 3_000;
      while (Date.now() < end) {
        const [list, create, message] = await Promise.all([
          call(instance, '/v1/pets'),
          call(instance, '/v1/categories', { method: 'POST', body: '{"name":"Never"}' }),
          call(instance, '/messages', { method: 'POST', body: '{"message":"never"}' }),
        ]);
        for (const res of [list, create, message]) {
          // A page kept from before may still be served; nothing else but a 503.
          if (res.status === 200 && res === list) continue;
          const text = await res.text();
          assert.equal(res.status, 503, text);
          const body = JSON.parse(text) as { code: string; status: number };
          assert.deepEqual([body.code, body.status], ['service_unavailable', 503]);
          assert.equal(res.headers.get('retry-after'), '1');
          refused++;
        }
      }
      const ready = await call(instance, '/readyz');
      assert.equal(ready.status, 503);
      assert.equal((await call(instance, '/healthz')).status, 200);
    } finally {
      postgres.start();
    }
    assert.ok(refused > 20, `only ${refused} requests were refused`);
    await until(
      'the API answers again',
      async () => (await call(instance, '/v1/pets')).status === 200,
      30_000,
    );
    assert.equal(
      (await call(instance, '/messages', { method: 'POST', body: '{"message":"after"}' })).status,
      202,
    );

    // Once when it began, once when it ended; no line per refused request, no stack.
    await until('the end of the outage logged', () => /is reachable again/.test(instance.log));
    // (The instances log at info: every request has its two lines, which are not counted.)
    const lines = logLines(instance)
      .slice(linesBefore)
      .filter((l) => l.level >= 40);
    const shown = JSON.stringify(lines, null, 1);
    const began = lines.filter((l) => /PostgreSQL at .* is unreachable/.test(l.msg));
    const ended = lines.filter((l) => /PostgreSQL at .* is reachable again/.test(l.msg));
    assert.equal(began.length, 1, shown);
    assert.equal(ended.length, 1, shown);
    assert.equal(lines.length, 2, shown);
    assert.doesNotMatch(instance.log.split('\n').slice(linesBefore).join('\n'), /"stack"/);
    assert.equal(instance.child.exitCode, null);
  });
});

describe('an instance started before its PostgreSQL and Redis', () => {
  let postgres: Postgres;
  let redis: Redis;
  let instance: Instance | undefined;

  before(async () => {
    assert.ok(
      existsSync('dist/server.js'),
      'run `npm run build` first (npm run test:cluster does)',
    );
    postgres = await Postgres.create();
    redis = await Redis.create({ started: false });
  });

  after(async () => {
    instance?.kill('SIGKILL');
    await redis?.destroy();
    postgres?.destroy();
  });

  it('listens at once, answers 503 until both answer, migrates, then serves', async () => {
    postgres.stop();
    // A password in the URL (trust auth ignores it): it must never reach the log.
    const databaseUrl = postgres.url.replace('postgres@', 'postgres:never-logged-pw@');
    const env = {
      ...instanceEnv(databaseUrl, redis.url),
      // A fresh database, migrated by the instance itself when it first answers.
      MIGRATE_ON_START: 'true',
    };
    instance = await Instance.start('early', env, { until: 'listening' });
    const started = instance;
    const get = (path: string) => fetch(`${started.base}${path}`);

    assert.equal((await get('/healthz')).status, 200);
    const early = await get('/v1/pets');
    assert.equal(early.status, 503);
    assert.equal(early.headers.get('retry-after'), '1');
    assert.equal(((await early.json()) as { code: string }).code, 'service_unavailable');
    assert.equal((await get('/readyz')).status, 503);
    assert.equal((await get('/v1/openapi.json')).status, 200, 'the document needs no database');
    await until('a try at PostgreSQL logged', () =>
      /PostgreSQL at 127\.0\.0\.1:\d+\/postgres does not answer yet/.test(started.log),
    );

    postgres.start();
    await until(
      'a try at Redis logged',
      () => /Redis at 127\.0\.0\.1:\d+ does not answer yet/.test(started.log),
      30_000,
    );
    assert.equal((await get('/readyz')).status, 503, 'ready without Redis');
    await redis.start();
    await until('ready', async () => (await get('/readyz')).status === 200, 30_000);

    // Migrated by the instance: an account and a key made now work at once.
    const email = `late-${randomUUID()}@example.com`;
    const signUp = await fetch(`${started.base}/v1/accounts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password: 'a late start password' }),
    });
    assert.equal(signUp.status, 201, await signUp.text());
    assert.doesNotMatch(started.log, /never-logged-pw/);
    for (const line of logLines(started)) {
      assert.ok(
        line.level < 50 || /unreachable/.test(line.msg),
        `an error was logged: ${line.msg}`,
      );
    }
    assert.equal(started.child.exitCode, null);
  });
});
