import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import { createServer, connect as dial, type Server, type Socket } from 'node:net';
import { after, describe, it } from 'node:test';
import SqliteDatabase from 'better-sqlite3';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { type Database, type DatabaseOptions, openDatabase } from '../src/store/database.js';
import {
  as,
  CHEAP_HASHES,
  captureLog,
  createCategory,
  databaseOfItsOwn,
  errorCode,
  newTenant,
  sqliteDatabaseUrl,
  startApp,
  type Tenant,
} from './helpers.js';

// What a write answers when the database cannot say whether it was stored
// (docs/decisions/0003-outcome-unknown.md), and when the database closes under queued writes.
// Real stores and real faults: the real fdatasync of the WAL, then a failure reported as a
// failing disk reports it; a real PostgreSQL connection cut after COMMIT, before its answer.

/** An app on `url`, its database opened with `options`: one process of the service. */
async function appOn(
  url: string,
  options: DatabaseOptions = {},
  logStream?: { write(line: string): void },
) {
  const config = loadConfig({
    DATABASE_URL: url,
    LOG_LEVEL: logStream ? 'warn' : 'silent',
    DEMO_ACCOUNT: 'false',
    ...CHEAP_HASHES,
    // No background writes: only the test's own requests write.
    WORKER: 'off',
    // The same keys for every process on the store: a restart opens what the first sealed.
    SESSION_SECRET: 'write-outcome test session secret of 32+ characters',
    WEBHOOK_SECRET_KEY: 'write-outcome test webhook key of 32+ characters',
  });
  const database = openDatabase(url, { poolSize: 2, ...options });
  await database.schema.migrate();
  const app = await buildApp({ config, database, ...(logStream && { logStream }) });
  return {
    app,
    database,
    close: async () => {
      await app.close();
      await database.close();
    },
  };
}

const postPet = (app: FastifyInstance, tenant: Tenant, body: object, key?: string) =>
  as(app, tenant, {
    method: 'POST',
    url: '/v1/pets',
    payload: body,
    headers: key === undefined ? {} : { 'idempotency-key': key },
  });

/** The tenant's pets of that name, read through the API. */
async function petsNamed(app: FastifyInstance, tenant: Tenant, name: string) {
  const res = await as(app, tenant, { url: '/v1/pets?limit=100' });
  assert.equal(res.statusCode, 200, res.body);
  return (res.json() as Array<{ id: number; name: string }>).filter((pet) => pet.name === name);
}

function assertOutcomeUnknown(res: LightMyRequestResponse): void {
  assert.equal(res.statusCode, 503, res.body);
  assert.equal(errorCode(res), 'outcome_unknown');
  assert.equal(res.headers['retry-after'], '1');
  const { message } = res.json() as { message: string };
  assert.doesNotMatch(message, /nothing was changed/i);
  assert.match(message, /may have been stored/);
  assert.match(message, /same Idempotency-Key/);
}

describe('a write whose WAL sync fails after COMMIT (SQLite)', () => {
  const made = sqliteDatabaseUrl();
  after(() => made.cleanup());

  it('answers 503 outcome_unknown, keeps the row, refuses writes until a restart, then replays', async () => {
    const name = `Unconfirmed ${randomUUID()}`;
    let failing = false;
    let pending: SqliteDatabase.Database | undefined;
    /** The pet is committed: the sync covering its commit is the one to fail. */
    const committed = () => {
      pending ??= new SqliteDatabase(made.url.slice('sqlite:'.length), { readonly: true });
      return pending.prepare('select count(*) from pets where name = ?').pluck().get(name) === 1;
    };
    const datasync = async (file: FileHandle) => {
      await file.datasync();
      if (failing && committed()) {
        failing = false;
        // What fdatasync reports when the disk could not write a page back (EIO).
        throw Object.assign(new Error('EIO: i/o error, fdatasync'), {
          code: 'EIO',
          errno: -5,
          syscall: 'fdatasync',
        });
      }
    };
    const log = captureLog();
    const first = await appOn(made.url, { datasync }, log.stream);
    let second: Awaited<ReturnType<typeof appOn>> | undefined;
    try {
      const tenant = await newTenant(first.app);
      const category = await createCategory(first.app, tenant, 'Unsure');
      const body = { name, categoryId: category.id };
      const key = randomUUID();

      failing = true;
      const unknown = await postPet(first.app, tenant, body, key);
      assertOutcomeUnknown(unknown);
      assert.equal(failing, false, 'the sync did not fail');
      // Stored, and seen: the GETs say so.
      assert.equal((await petsNamed(first.app, tenant, name)).length, 1);

      // No later commit could be known to be on disk: writes are refused, and say so truly.
      const refused = await postPet(first.app, tenant, body, key);
      assert.equal(refused.statusCode, 503, refused.body);
      assert.equal(errorCode(refused), 'service_unavailable');
      assert.match(refused.json().message, /nothing was changed/);
      assert.equal((await postPet(first.app, tenant, body)).statusCode, 503);
      assert.equal((await petsNamed(first.app, tenant, name)).length, 1);
      await first.close();

      // A restart (SQLite recovers the WAL as it is): the retry with the same key is answered
      // with what was stored, not done twice.
      second = await appOn(made.url);
      const retried = await postPet(second.app, tenant, body, key);
      assert.equal(retried.statusCode, 201, retried.body);
      assert.equal(retried.headers['idempotent-replayed'], 'true');
      const pets = await petsNamed(second.app, tenant, name);
      assert.equal(pets.length, 1, 'a second pet');
      assert.equal(retried.json().id, pets[0]?.id);
      // Logged as the error it is, with its cause; the refusals after it as the disk failing.
      const errors = log.lines().filter((line) => Number(line.level) >= 50);
      assert.match(String(errors[0]?.msg), /WAL sync failed/);
      assert.deepEqual(errors[0]?.cause, {
        code: 'SQLITE_IOERR_FSYNC',
        message: 'disk I/O error: EIO: i/o error, fdatasync',
      });
    } finally {
      pending?.close();
      await first.close();
      await second?.close();
    }
  });
});

/**
 * A TCP proxy to PostgreSQL that, once armed, cuts the connection whose transaction carried
 * `marker` just after the server answers its COMMIT: committed, and the client never hears.
 */
async function commitCutter(target: URL) {
  let marker: Buffer | undefined;
  let cut = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = dial(Number(target.port || 5432), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {});
    }
    let carried = false;
    let committing = false;
    client.on('data', (chunk: Buffer) => {
      if (marker && chunk.includes(marker)) carried = true;
      if (carried && chunk.includes('commit\0')) {
        marker = undefined;
        committing = true;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      // CommandComplete "COMMIT": the server has committed; its answer goes nowhere.
      if (committing && chunk.includes('COMMIT\0')) {
        cut++;
        client.destroy();
        upstream.destroy();
        return;
      }
      client.write(chunk);
    });
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const url = new URL(target.href);
  url.hostname = '127.0.0.1';
  url.port = String(typeof address === 'object' && address ? address.port : 0);
  return {
    url: url.href,
    arm: (text: string) => {
      marker = Buffer.from(text);
    },
    cuts: () => cut,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('a write whose COMMIT answer is lost (PostgreSQL)', {
  skip: !process.env.TEST_DATABASE_URL && 'PostgreSQL: set TEST_DATABASE_URL',
}, () => {
  it('answers 503 outcome_unknown, keeps the row, and replays the retry with the same key', async () => {
    const store = await databaseOfItsOwn({ migrated: true });
    const proxy = await commitCutter(new URL(store.url));
    const t = await appOn(proxy.url);
    try {
      const tenant = await newTenant(t.app);
      const category = await createCategory(t.app, tenant, 'Unsure');
      const name = `Unconfirmed ${randomUUID()}`;
      const body = { name, categoryId: category.id };
      const key = randomUUID();

      proxy.arm(name);
      assertOutcomeUnknown(await postPet(t.app, tenant, body, key));
      assert.equal(proxy.cuts(), 1);
      assert.equal((await petsNamed(t.app, tenant, name)).length, 1, 'committed');

      // PostgreSQL made it durable itself: the writer goes on, and the retry is replayed.
      const retried = await postPet(t.app, tenant, body, key);
      assert.equal(retried.statusCode, 201, retried.body);
      assert.equal(retried.headers['idempotent-replayed'], 'true');
      const pets = await petsNamed(t.app, tenant, name);
      assert.equal(pets.length, 1, 'a second pet');
      assert.equal(retried.json().id, pets[0]?.id);
    } finally {
      await t.close();
      await proxy.close();
      await store.drop();
    }
  });
});

describe('closing the database with writes queued', () => {
  it('commits and answers those queued, refuses those after with 503, never 500', async () => {
    const log = captureLog();
    let closeAt: string | undefined;
    let closing: Promise<void> | undefined;
    const t = await startApp({
      ownStore: true,
      env: { LOG_LEVEL: 'warn', WORKER: 'off' },
      logStream: log.stream,
      wrapDatabase: (database): Database => ({
        ...database,
        write: (work, options) => {
          const write = database.write(work, options);
          // The first pet's write is queued (its batch begins in the next turn): close now.
          if (closeAt !== undefined && options?.numbersFor === closeAt) {
            closeAt = undefined;
            closing = database.close();
          }
          return write;
        },
      }),
    });
    try {
      const tenant = await newTenant(t.app);
      const category = await createCategory(t.app, tenant, 'Closing');
      closeAt = tenant.accountId;
      const answers = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          postPet(t.app, tenant, { name: `Queued ${i}`, categoryId: category.id }),
        ),
      );
      await closing;
      const created = answers.filter((res) => res.statusCode === 201);
      const refused = answers.filter((res) => res.statusCode !== 201);
      assert.ok(created.length >= 1, 'the write queued before close was not committed');
      for (const res of refused) {
        assert.equal(res.statusCode, 503, res.body);
        assert.equal(errorCode(res), 'service_unavailable');
        assert.match(res.json().message, /nothing was changed/);
      }
      assert.deepEqual(
        log.lines().filter((line) => Number(line.level) >= 50),
        [],
        'an error was logged (a write met a closed connection)',
      );

      // What was answered 201 is stored, and nothing else.
      const check = openDatabase(t.databaseUrl, { poolSize: 1 });
      try {
        const stored = await check.reader
          .selectFrom('pets')
          .select('name')
          .where('account_id', '=', tenant.accountId)
          .execute();
        assert.deepEqual(
          stored.map((pet) => pet.name).sort(),
          created.map((res) => res.json().name as string).sort(),
        );
      } finally {
        await check.close();
      }
    } finally {
      await t.close();
    }
  });
});
