import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { ERRORS, type ErrorCode, saysNextStep, withNextStep } from '../src/errors.js';
import { toApiError } from '../src/http/error-handler.js';
import { createLog } from '../src/log.js';
import { Outages } from '../src/ops/outages.js';
import { openDatabase } from '../src/store/database.js';
import { raisedByPostgres, storeTrouble } from '../src/store/store-errors.js';
import {
  as,
  basic,
  captureLog,
  createCategory,
  createPet,
  newTenant,
  startApp,
} from './helpers.js';

/** A log stream for an app, and what was written to it. */
describe('error table and handler', () => {
  it('gives every code a status that matches its class', () => {
    for (const [code, { status }] of Object.entries(ERRORS)) {
      assert.match(code, /^[a-z]+(_[a-z]+)*$/, code);
      assert.ok(status >= 400 && status < 600, code);
    }
  });

  it('gives every code a next step: one short sentence that tells the caller what to do', () => {
    for (const [code, { next }] of Object.entries(ERRORS)) {
      assert.ok(saysNextStep(next), `${code}: ${next}`);
      assert.match(next, /^[A-Z][\s\S]*\.$/, code);
      assert.doesNotMatch(next.slice(0, -1), /\.\s/, `${code}: one sentence`);
      assert.ok(next.length <= 120, `${code}: ${next.length} characters`);
      // Said once: a message that ends with it is left as it is.
      assert.equal(withNextStep(code as ErrorCode, next), next, code);
    }
  });

  it("adds its code's next step to a message that says none, and none to one that does", () => {
    const { next } = ERRORS.not_found;
    assert.equal(withNextStep('not_found', 'No pet 7.'), `No pet 7. ${next}`);
    for (const said of [
      'No category 3 in this account; create it first.',
      'Send your API key as `Authorization: Bearer <API_KEY>`.',
      'Too many attempts. Wait 5 s, then try again.',
      'This operation was removed on 2030-12-05: use GET /v1/pets?id={petId}.',
      'A request with this Idempotency-Key is still running, or retry later.',
    ]) {
      assert.equal(withNextStep('not_found', said), said);
    }
    // A word that begins an instruction elsewhere is none in the middle of a clause, nor as a
    // header's name.
    for (const problem of [
      'The Idempotency-Key is in use by another request.',
      'Pet 3 is sold, not available.',
      'Retry-After was missing.',
    ]) {
      assert.ok(!saysNextStep(problem), problem);
    }
  });

  it("adds the next step to every kind of answer: a change's failure, a thrown error, a 500", async () => {
    const t = await startApp();
    try {
      t.app.get('/v1/boom', async () => {
        throw new Error('broken on purpose');
      });
      const tenant = await newTenant(t.app);
      const category = await createCategory(t.app, tenant);
      const pet = await createPet(t.app, tenant, { categoryId: category.id, status: 'sold' });
      const answers = {
        // A failure a POST's change returned (src/http/reply.ts).
        pet_not_available: await as(t.app, tenant, {
          method: 'POST',
          url: '/v1/store/orders',
          payload: { petId: pet.id },
        }),
        // Thrown, through the error handler.
        invalid_transition: await as(t.app, tenant, {
          method: 'PATCH',
          url: `/v1/pets/${pet.id}`,
          payload: { status: 'available' },
        }),
        validation_failed: await as(t.app, tenant, { url: '/v1/pets?limit=0' }),
        internal_error: await t.app.inject({ url: '/v1/boom' }),
      };
      for (const [code, res] of Object.entries(answers)) {
        const body = res.json();
        assert.equal(body.code, code, res.body);
        assert.ok(body.message.endsWith(ERRORS[code as ErrorCode].next), res.body);
      }
      assert.equal(
        answers.pet_not_available.json().message,
        `Pet ${pet.id} is sold, not available. ${ERRORS.pet_not_available.next}`,
      );
    } finally {
      await t.close();
    }
  });

  it('names the path a 404 meant when only the /v1 prefix was added or left out', async () => {
    const t = await startApp();
    try {
      const tenant = await newTenant(t.app);
      const messageOf = async (method: 'GET' | 'POST', url: string) => {
        const res = await as(t.app, tenant, { method, url });
        assert.equal(res.statusCode, 404, res.body);
        assert.equal(res.json().code, 'route_not_found');
        return res.json().message;
      };
      assert.equal(
        await messageOf('GET', '/v1/healthz'),
        'No operation at /v1/healthz; send it to /healthz instead.',
      );
      assert.equal(
        await messageOf('GET', '/pets?status=sold'),
        'No operation at /pets; send it to /v1/pets instead.',
      );
      assert.equal(
        await messageOf('GET', '/store/orders/7'),
        'No operation at /store/orders/7; send it to /v1/store/orders/7 instead.',
      );
      for (const url of ['/v1/no-such-route', '/nowhere', '/v1/']) {
        assert.equal(
          await messageOf('GET', url),
          `No operation at ${url}; see /docs for the paths served (the API's start with /v1).`,
        );
      }
    } finally {
      await t.close();
    }
  });

  it('tells a refused API key what is wrong with it and how to get a working one', async () => {
    const t = await startApp();
    try {
      const tenant = await newTenant(t.app);
      const revoked = await newTenant(t.app);
      const gone = await t.app.inject({
        method: 'DELETE',
        url: `/v1/keys/${revoked.keyId}`,
        headers: { authorization: basic(revoked.email, revoked.password) },
      });
      assert.equal(gone.statusCode, 204, gone.body);
      const refusal = async (key: string) => {
        const res = await t.app.inject({
          url: '/v1/pets',
          headers: { authorization: `Bearer ${key}` },
        });
        assert.equal(res.json().code, 'invalid_api_key', res.body);
        assert.ok(!res.body.includes(key), 'the key is echoed back');
        return res.json().message;
      };
      const unknown = `as_test_${'x'.repeat(40)}`;
      const getOne = "Get a working key in the portal's Keys page or with `POST /v1/keys`.";
      assert.equal(
        await refusal('not-a-key'),
        'This is not an API key of ours: ours start `as_test_`, `as_live_`, `as_pk_test_` or ' +
          `\`as_pk_live_\`. ${getOne}`,
      );
      // Unknown and revoked are one answer (docs/decisions/0078-errors-say-what-to-do.md).
      assert.equal(
        await refusal(unknown),
        `This API key is unknown to this server, or revoked. ${getOne}`,
      );
      assert.equal(await refusal(revoked.key), await refusal(unknown));
      assert.equal(
        await refusal(`as_live_${'x'.repeat(40)}`),
        'This API key belongs to the production environment, and this server is development: ' +
          "use the key there, or get an as_test_… key here, in the portal's Keys page or with " +
          '`POST /v1/keys`.',
      );
      assert.equal((await as(t.app, tenant, { url: '/v1/pets' })).statusCode, 200);
    } finally {
      await t.close();
    }
  });

  it("never lets an unexpected error's text reach the client", () => {
    const err = toApiError(new Error('connection to 10.0.0.5 failed: password authentication'));
    assert.equal(err.status, 500);
    assert.equal(err.code, 'internal_error');
    assert.doesNotMatch(err.message, /10\.0\.0\.5|password/);
  });

  it('answers 503 with Retry-After, not 500, when the database is away or too busy', () => {
    const coded = (message: string, code: string) => Object.assign(new Error(message), { code });
    // As the store's PostgreSQL pool and connections hand them out (src/store/pg-pool.ts).
    const pg = <E>(err: E) => raisedByPostgres(err);
    const away = [
      pg(coded('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED')),
      pg(coded('read ECONNRESET', 'ECONNRESET')),
      pg(coded('terminating connection due to administrator command', '57P01')),
      pg(coded('the database system is starting up', '57P03')),
      pg(coded('connection failure', '08006')),
      pg(new Error('Connection terminated unexpectedly')),
      pg(new Error('timeout exceeded when trying to connect')),
      pg(new AggregateError([coded('connect ECONNREFUSED ::1:5432', 'ECONNREFUSED')], '')),
      pg(coded('canceling statement due to statement timeout', '57014')),
      pg(coded('sorry, too many clients already', '53300')),
      coded('database is locked', 'SQLITE_BUSY'),
    ];
    for (const err of away) {
      const answer = toApiError(err);
      assert.equal(answer.status, 503, err.message);
      assert.equal(answer.code, 'service_unavailable');
      assert.deepEqual(answer.headers, { 'retry-after': '1' });
      assert.doesNotMatch(answer.message, /127\.0\.0\.1|ECONN|administrator/);
    }
    const failing = [
      pg(coded('could not extend file: No space left on device', '53100')),
      pg(coded('out of memory', '53200')),
      pg(coded('could not write to file', '58030')),
      coded('database or disk is full', 'SQLITE_FULL'),
      coded('disk I/O error', 'SQLITE_IOERR'),
      coded('disk I/O error: EIO', 'SQLITE_IOERR_FSYNC'),
      coded('out of memory', 'SQLITE_NOMEM'),
    ];
    for (const err of failing) {
      const answer = toApiError(err);
      assert.equal(answer.status, 503, err.message);
      assert.equal(answer.code, 'service_unavailable');
      assert.match(answer.message, /cannot store anything at the moment; nothing was changed/);
      assert.doesNotMatch(answer.message, /disk|space|memory/);
    }
    for (const err of [
      pg(coded('syntax error at or near "selec"', '42601')),
      pg(coded('duplicate key value violates unique constraint', '23505')),
      coded('UNIQUE constraint failed: pets.id', 'SQLITE_CONSTRAINT_PRIMARYKEY'),
    ]) {
      assert.equal(toApiError(err).status, 500, err.message);
    }
  });

  it("never takes a network error for the database's unless the store raised it", () => {
    const coded = (message: string, code: string) => Object.assign(new Error(message), { code });
    // What a client's own dropped connection, or any socket but the store's, raises: the codes
    // of a lost database connection, and no outage of the database.
    const elsewhere = [
      coded('aborted', 'ECONNRESET'),
      coded('read ECONNRESET', 'ECONNRESET'),
      coded('write EPIPE', 'EPIPE'),
      coded('socket hang up', 'ECONNABORTED'),
      coded('connect ETIMEDOUT 203.0.113.9:443', 'ETIMEDOUT'),
      coded('getaddrinfo ENOTFOUND hooks.example', 'ENOTFOUND'),
      coded('terminating connection, said by no database of ours', '57P01'),
      new Error('Connection terminated unexpectedly'),
      new AggregateError([coded('connect ECONNREFUSED ::1:443', 'ECONNREFUSED')], ''),
    ];
    const log = captureLog();
    const outages = new Outages(createLog('error', log.stream), {});
    for (const err of elsewhere) {
      assert.equal(storeTrouble(err), undefined, err.message);
      assert.notEqual(toApiError(err).status, 503, err.message);
      assert.equal(outages.databaseFailed(err), false, err.message);
    }
    assert.equal(outages.isDown('database'), false);
    assert.equal(log.text(), '');
    // The same error once the store's pool hands it out is an outage.
    assert.equal(
      storeTrouble(raisedByPostgres(coded('read ECONNRESET', 'ECONNRESET'))),
      'unreachable',
    );
  });

  it("marks what PostgreSQL's driver raises as the store's: a timeout, a terminated connection, a refused one", {
    skip: process.env.TEST_DATABASE_URL ? false : 'PostgreSQL only',
  }, async () => {
    const url = process.env.TEST_DATABASE_URL as string;
    const database = openDatabase(url, { poolSize: 2, statementTimeoutMs: 50 });
    const away = openDatabase(Object.assign(new URL(url), { port: '1' }).href, { poolSize: 1 });
    const failure = (work: Promise<unknown>) =>
      work.then(
        () => undefined,
        (err: unknown) => err,
      );
    try {
      // Through the reader (Kysely's driver) and through a write (the group commit's client).
      const slow = sql`select pg_sleep(1)`;
      assert.equal(storeTrouble(await failure(slow.execute(database.reader))), 'busy');
      assert.equal(storeTrouble(await failure(database.write((tx) => slow.execute(tx)))), 'busy');
      // The server ends the connection the query runs on (57P01).
      const ended = await failure(
        sql`select pg_terminate_backend(pg_backend_pid())`.execute(database.reader),
      );
      assert.equal(storeTrouble(ended), 'unreachable', String(ended));
      // Nothing listens: the pool's connect fails.
      const refused = sql`select 1`;
      assert.equal(storeTrouble(await failure(refused.execute(away.reader))), 'unreachable');
      assert.equal(
        storeTrouble(await failure(away.write((tx) => refused.execute(tx)))),
        'unreachable',
      );
    } finally {
      await away.close();
      await database.close();
    }
  });

  it('logs an unreachable database once, not per refused request', async () => {
    const log = captureLog();
    // Nothing listens on port 1: every query is refused at once.
    const config = loadConfig({
      DATABASE_URL: 'postgres://app:never-logged@127.0.0.1:1/nowhere',
      LOG_LEVEL: 'warn',
      DEMO_ACCOUNT: 'false',
    });
    const database = openDatabase(config.databaseUrl, { poolSize: 2 });
    const app = await buildApp({ config, database, logStream: log.stream });
    try {
      for (let i = 0; i < 20; i++) {
        const res = await app.inject({
          url: '/v1/pets',
          headers: { authorization: `Bearer as_test_${'x'.repeat(40)}` },
        });
        assert.equal(res.statusCode, 503, res.body);
        assert.equal(res.headers['retry-after'], '1');
        assert.equal(res.json().code, 'service_unavailable');
      }
      const lines = log.lines();
      assert.equal(lines.length, 1, JSON.stringify(lines));
      assert.equal(lines[0]?.level, 50);
      assert.match(String(lines[0]?.msg), /PostgreSQL at 127\.0\.0\.1:1\/nowhere is unreachable/);
      assert.doesNotMatch(log.text(), /never-logged|"stack"/);
    } finally {
      await app.close();
      await database.close();
    }
  });

  it('answers 503 and stores nothing while the SQLite disk is full, and stores again once it has room', {
    skip: process.env.TEST_DATABASE_URL ? 'SQLite only' : false,
  }, async () => {
    const log = captureLog();
    // The request log off: a batch of it meeting the full file logs a line of its own (once,
    // tested in request-log.test.ts), which this test of the API's writes would count.
    const t = await startApp({
      ownStore: true,
      logStream: log.stream,
      env: { LOG_LEVEL: 'warn', REQUEST_LOG: 'off' },
    });
    try {
      const tenant = await newTenant(t.app);
      const category = await t.app.inject({
        method: 'POST',
        url: '/v1/categories',
        headers: tenant.headers,
        payload: { name: 'Dogs' },
      });
      const addPet = (name: string) =>
        t.app.inject({
          method: 'POST',
          url: '/v1/pets',
          headers: tenant.headers,
          payload: { name, categoryId: category.json().id },
        });
      // The file may not grow past its pages now: SQLite answers SQLITE_FULL, as it does
      // when the disk itself is full.
      const limit = (pages: number | string) =>
        t.database.write((tx) => sql.raw(`pragma max_page_count = ${pages}`).execute(tx));
      const [counted] = (
        await sql<{ page_count: number }>`pragma page_count`.execute(t.database.reader)
      ).rows;
      await limit(counted?.page_count ?? 0);
      let created = 0;
      let refused: Awaited<ReturnType<typeof addPet>> | undefined;
      while (!refused && created < 5_000) {
        const res = await addPet(`Pet ${created}`);
        if (res.statusCode === 201) created++;
        else refused = res;
      }
      assert.ok(refused, 'the file never filled');
      assert.equal(refused.statusCode, 503, refused.body);
      assert.equal(refused.headers['retry-after'], '1');
      assert.equal(refused.json().code, 'service_unavailable');
      // Nothing of the refused write: no pet, no event.
      const stored = async (table: 'pets' | 'events') =>
        (
          await sql<{ n: number }>`select count(*) as n from ${sql.table(table)}
            where account_id = ${tenant.accountId}`.execute(t.database.reader)
        ).rows[0]?.n;
      assert.equal(await stored('pets'), created);
      assert.equal(await stored('events'), created, 'one pet.created event per pet');
      const failures = log.lines().filter((line) => line.level === 50);
      assert.equal(failures.length, 1, log.text());
      assert.match(String(failures[0]?.msg), /cannot store: disk full or failing/);
      assert.doesNotMatch(log.text(), /"stack"/);

      await limit(1_073_741_823);
      const again = await addPet('After');
      assert.equal(again.statusCode, 201, again.body);
      assert.equal(again.json().id, created + 1, 'no number lost to the refused write');
    } finally {
      await t.close();
    }
  });

  it('answers an error thrown inside a handler as a bare 500 Error body', async () => {
    const t = await startApp();
    try {
      t.app.get('/v1/boom', async () => {
        throw new Error('SELECT secret FROM internals');
      });
      const res = await t.app.inject({ url: '/v1/boom' });
      assert.equal(res.statusCode, 500);
      assert.deepEqual(res.json(), {
        code: 'internal_error',
        message: `Something went wrong on our side; it has been logged. ${ERRORS.internal_error.next}`,
        status: 500,
      });
    } finally {
      await t.close();
    }
  });

  it('never writes an API key or password to the log', async () => {
    const log = captureLog();
    const t = await startApp({ env: { LOG_LEVEL: 'trace' }, logStream: log.stream });
    try {
      const tenant = await newTenant(t.app);
      await t.app.inject({ url: '/v1/pets', headers: tenant.headers });
      await t.app.inject({ url: '/v1/pets', headers: { authorization: 'Bearer as_test_leak' } });
      const logged = log.text();
      assert.ok(logged.includes('"reqId"'), 'the log has request ids');
      assert.ok(!logged.includes(tenant.key), 'API key in the log');
      assert.ok(!logged.includes(tenant.password), 'password in the log');
      assert.ok(!logged.includes('as_test_leak'), 'bad key in the log');
    } finally {
      await t.close();
    }
  });

  it('logs a failed request with its id at the default level, and nothing for the others', async () => {
    const log = captureLog();
    const t = await startApp({ env: { LOG_LEVEL: 'warn' }, logStream: log.stream });
    try {
      t.app.get('/v1/boom', async () => {
        throw new Error('broken on purpose');
      });
      const tenant = await newTenant(t.app);
      await t.app.inject({ url: '/v1/pets', headers: tenant.headers });
      const res = await t.app.inject({ url: '/v1/boom' });
      assert.equal(res.statusCode, 500);
      const lines = log.lines();
      assert.equal(lines.length, 1, JSON.stringify(lines));
      const [line] = lines;
      assert.equal(line?.level, 50);
      assert.equal(line?.reqId, res.headers['x-request-id']);
      assert.match(JSON.stringify(line?.err), /broken on purpose/);
    } finally {
      await t.close();
    }
  });

  it('names every answer with its request id, errors included, echoing a given one', async () => {
    const t = await startApp();
    try {
      const tenant = await newTenant(t.app);
      const answers = [
        await t.app.inject({ url: '/v1/pets', headers: tenant.headers }),
        await t.app.inject({ url: '/v1/pets' }),
        await t.app.inject({ url: '/v1/no-such-route', headers: tenant.headers }),
        await t.app.inject({ url: '/v1/pets?limit=0', headers: tenant.headers }),
        await t.app.inject({ url: '/v1/pets/%E0%A4%A', headers: tenant.headers }),
        await t.app.inject({ url: '/v1/pets', headers: { ...tenant.headers, host: 'bad host' } }),
      ];
      assert.deepEqual(
        answers.map((r) => r.statusCode),
        [200, 401, 404, 400, 400, 400],
      );
      for (const res of answers) {
        assert.match(String(res.headers['x-request-id']), /^[0-9a-f-]{36}$/, res.body);
      }
      const given = await t.app.inject({
        url: '/v1/pets',
        headers: { ...tenant.headers, 'x-request-id': 'trace-42.a_b' },
      });
      assert.equal(given.headers['x-request-id'], 'trace-42.a_b');
      // `stats` would name the log's counts, not its entry (GET /v1/requests/stats).
      const stats = await t.app.inject({
        url: '/v1/pets',
        headers: { ...tenant.headers, 'x-request-id': 'stats' },
      });
      assert.match(String(stats.headers['x-request-id']), /^[0-9a-f-]{36}$/);
    } finally {
      await t.close();
    }
  });

  it('ends each connection after its answer while shutting down', async () => {
    const t = await startApp();
    try {
      const tenant = await newTenant(t.app);
      const open = await t.app.inject({ url: '/v1/pets', headers: tenant.headers });
      assert.notEqual(open.headers.connection, 'close');
      t.app.ctx.lifecycle.draining = true;
      for (const url of ['/v1/pets', '/v1/nowhere', '/healthz']) {
        const res = await t.app.inject({ url, headers: tenant.headers });
        assert.equal(res.headers.connection, 'close', url);
      }
    } finally {
      t.app.ctx.lifecycle.draining = false;
      await t.close();
    }
  });
});
