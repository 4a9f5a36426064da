import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { systemClock } from '../../src/clock.js';
import { createAccount } from '../../src/domain/accounts.js';
import { MessageProcessor } from '../../src/messages/processor.js';
import type { MessageSink } from '../../src/messages/sink.js';
import { Outages } from '../../src/ops/outages.js';
import { openDatabase } from '../../src/store/database.js';
import {
  databaseOfItsOwn,
  storeAccountKey,
  storeKey,
  testDatabaseUrl,
  testPasswords,
} from '../helpers.js';
import { kill, type Server, startServer } from './server-process.js';

describe('a message survives a crash of the process that accepted it', () => {
  const { url, cleanup } = testDatabaseUrl();
  const servers: Server[] = [];
  after(async () => {
    for (const server of servers) await kill(server, 'SIGKILL');
    cleanup();
  });

  it('is accepted, the process is killed with SIGKILL, and after a restart it is sent once', async () => {
    // The account and key, made straight in the store (a fixture): the server starts empty.
    const secret = await storeKey(url);

    const env: Record<string, string> = { DATABASE_URL: url };
    if (process.env.TEST_REDIS_URL) {
      env.REDIS_URL = process.env.TEST_REDIS_URL;
      env.REDIS_KEY_PREFIX = `test-${randomUUID()}:`;
    }
    const headers = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };

    // The first process accepts, with no worker, so the message is still queued when it dies.
    const first = await startServer({ ...env, WORKER: 'off' });
    servers.push(first);
    const accepted = await fetch(`${first.base}/messages`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ message: 'survive this' }),
    });
    assert.equal(accepted.status, 202);
    const { id } = (await accepted.json()) as { id: string };
    await kill(first, 'SIGKILL');

    const second = await startServer({ ...env, WORKER: 'on' });
    servers.push(second);
    const started = Date.now();
    let status = '';
    while (status !== 'sent' && Date.now() - started < 60_000) {
      const res = await fetch(`${second.base}/messages/${id}`, { headers });
      status = ((await res.json()) as { status: string }).status;
      if (status !== 'sent') await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(status, 'sent');
    await kill(second, 'SIGTERM');
    assert.equal(second.child.exitCode, 0, second.output());
    const sentLines = second
      .output()
      .split('\n')
      .filter((line) => line.includes('"message sent"') && line.includes(id));
    assert.equal(sentLines.length, 1, second.output());
  });
});

describe('a process killed while its worker delivers', () => {
  let server: Server | undefined;
  // A store of its own: the kill leaves messages unsent, which no other test should meet.
  let url = '';
  let drop = async () => {};
  before(async () => {
    ({ url, drop } = await databaseOfItsOwn({ migrated: true }));
  });
  after(async () => {
    if (server) await kill(server, 'SIGKILL');
    await drop();
  });

  it('leaves no message `sent` without its delivery line (the default sink)', async () => {
    const { secret, accountId } = await storeAccountKey(url);
    const env: Record<string, string> = { DATABASE_URL: url };
    if (process.env.TEST_REDIS_URL) {
      env.REDIS_URL = process.env.TEST_REDIS_URL;
      env.REDIS_KEY_PREFIX = `test-${randomUUID()}:`;
    }
    server = await startServer(env);
    const { base } = server;
    const headers = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
    // Messages posted from 16 connections while the worker delivers; SIGKILL in mid-stream.
    let posting = true;
    const accepted: string[] = [];
    const loops = Array.from({ length: 16 }, async () => {
      while (posting) {
        const res = await fetch(`${base}/messages`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ message: 'delivered before it is sent' }),
        }).catch(() => undefined);
        if (res?.status === 202) accepted.push(((await res.json()) as { id: string }).id);
      }
    });
    const database = openDatabase(url, { poolSize: 1 });
    try {
      const sentCount = async () =>
        Number(
          (
            await database.reader
              .selectFrom('messages')
              .select((eb) => eb.fn.countAll().as('n'))
              .where('account_id', '=', accountId)
              .where('status', '=', 'sent')
              .executeTakeFirstOrThrow()
          ).n,
        );
      // Killed once the worker has settled a good number, while more keep coming.
      const deadline = Date.now() + 30_000;
      while ((await sentCount()) < 300 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20));
      }
      // A log reader that falls behind (a busy terminal, a slow log shipper): the pipe fills,
      // and a line not yet written must hold its message back from `sent`.
      server.child.stdout?.pause();
      await new Promise((r) => setTimeout(r, 1_000));
      const closed = new Promise((r) => server?.child.once('close', r));
      server.child.kill('SIGKILL');
      server.child.stdout?.resume();
      await closed;
      posting = false;
      await Promise.all(loops);

      const delivered = new Set(
        server
          .output()
          .split('\n')
          .filter((line) => line.includes('"message sent"'))
          .map((line) => (JSON.parse(line) as { messageId: string }).messageId),
      );
      const sent = await database.reader
        .selectFrom('messages')
        .select('id')
        .where('account_id', '=', accountId)
        .where('status', '=', 'sent')
        .execute();
      assert.ok(sent.length >= 300, `only ${sent.length} messages were sent before the kill`);
      const missing = sent.filter((row) => !delivered.has(row.id));
      assert.deepEqual(missing, [], `${missing.length} of ${sent.length} sent without a line`);
      // And every acknowledged message is still there, whatever its status.
      const stored = await database.reader
        .selectFrom('messages')
        .select('id')
        .where('id', 'in', accepted)
        .execute();
      assert.equal(stored.length, accepted.length);
    } finally {
      posting = false;
      await database.close();
    }
  });
});

describe('a worker that dies holding a message', () => {
  it('loses it to another worker when its lease runs out, and cannot settle it after', async () => {
    const { url, cleanup } = testDatabaseUrl();
    const database = openDatabase(url);
    try {
      await database.schema.migrate();
      const account = await createAccount(database, systemClock, testPasswords, {
        email: `lease-${randomUUID()}@example.com`,
        password: 'long enough password',
      });
      assert.ok(account.ok);
      let now = Date.now();
      const clock = { now: () => new Date(now) };
      const delivered: string[] = [];
      const sink: MessageSink = { deliver: async (m) => void delivered.push(m.id) };
      const silent = { info() {}, warn() {}, error() {} } as never;
      const options = { maxAttempts: 5, retryBaseMs: 10, leaseMs: 30_000 };
      const worker = () =>
        new MessageProcessor(database, clock, sink, options, silent, new Outages(silent, {}));
      const dying = worker();
      const healthy = worker();

      const { acceptMessage } = await import('../../src/messages/domain.js');
      const { commit } = await import('../../src/store/change.js');
      const { message, change } = acceptMessage(clock, account.value.id, 'held');
      await commit(database, change);
      const [held] = await dying.claimDue(10);
      assert.equal(held?.id, message.id);
      assert.deepEqual(await healthy.claimDue(10), [], 'a leased message is not claimable');

      now += 30_001; // the lease runs out
      const [taken] = await healthy.claimDue(10);
      assert.equal(taken?.id, message.id);
      assert.deepEqual(await healthy.process(taken as NonNullable<typeof taken>), {
        status: 'sent',
      });
      // The first worker wakes up late: its settle is refused, the row stays sent once.
      assert.deepEqual(await dying.process(held as NonNullable<typeof held>), { status: 'lost' });
      const row = await database.reader
        .selectFrom('messages')
        .selectAll()
        .where('id', '=', message.id)
        .executeTakeFirstOrThrow();
      assert.equal(row.status, 'sent');
      assert.equal(row.attempts, 2);
    } finally {
      await database.close();
      cleanup();
    }
  });
});
