import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { acceptMessage, type Message } from '../src/messages/domain.js';
import { MessageProcessor } from '../src/messages/processor.js';
import type { MessageSink } from '../src/messages/sink.js';
import { TableQueue } from '../src/messages/table-queue.js';
import { Outages } from '../src/ops/outages.js';
import { commit } from '../src/store/change.js';
import type { Database } from '../src/store/database.js';
import { databaseOfItsOwn, storeWithAccount } from './helpers.js';

// The embedded queue hands messages its own process accepts straight to its worker, claimed at
// birth under the worker's lease. These tests hold that path to "sent once, at once", and to
// the lease rules every other path follows.

const silent = { info() {}, warn() {}, error() {}, debug() {}, trace() {}, fatal() {} } as never;
const options = { maxAttempts: 3, retryBaseMs: 10, leaseMs: 30_000 };

class RecordingSink implements MessageSink {
  readonly delivered: string[] = [];
  async deliver(message: Message): Promise<void> {
    this.delivered.push(message.id);
  }
}

async function statusOf(database: Database, id: string) {
  return database.reader
    .selectFrom('messages')
    .select(['status', 'attempts'])
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
}

async function until(check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
}

describe('table queue: messages claimed at birth', () => {
  let database: Database;
  let accountId: string;
  // A store of its own (another suite's worker, on the real clock, would claim these rows once
  // their leases ran out) and a standing clock, so leases run out only when a test says so.
  let drop = async () => {};
  let now = Date.parse('2000-01-01T00:00:00.000Z');
  const clock = { now: () => new Date(now) };

  before(async () => {
    const own = await databaseOfItsOwn({ migrated: true });
    drop = own.drop;
    ({ database, accountId } = await storeWithAccount(own.url, clock));
  });
  after(async () => {
    await database.close();
    await drop();
  });

  function queueWith(sink: MessageSink) {
    const processor = new MessageProcessor(
      database,
      clock,
      sink,
      options,
      silent,
      new Outages(silent, {}),
    );
    return {
      processor,
      queue: new TableQueue(processor, clock, 8, new Outages(silent, {})),
    };
  }

  async function rowOf(id: string) {
    return database.reader
      .selectFrom('messages')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
  }

  it('leases nothing while its worker is stopped: the message waits in the table', async () => {
    const { queue } = queueWith(new RecordingSink());
    const message = await commit(database, queue.accept(accountId, 'waits'));
    const row = await rowOf(message.id);
    assert.equal(row.status, 'queued');
    assert.equal(row.lease_token, null);
    assert.equal(row.attempts, 0);
  });

  it('stores what it tells the client (queued) and sends each message once, at once', async () => {
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const delivered: string[] = [];
    const { queue } = queueWith({
      deliver: async (message) => {
        await gate;
        delivered.push(message.id);
      },
    });
    queue.startWorker();
    try {
      const early = await commit(database, queue.accept(accountId, 'early'));
      assert.equal(early.status, 'queued', 'the client is told queued');
      now += 1_500; // the next message gets a new lease
      const late = await commit(database, queue.accept(accountId, 'late'));
      const [earlyRow, lateRow] = [await rowOf(early.id), await rowOf(late.id)];
      // Claimed at birth and held by the worker, which is delivering: the rows say queued.
      assert.equal(earlyRow.status, 'queued');
      assert.equal(lateRow.status, 'queued');
      assert.ok(earlyRow.lease_token && lateRow.lease_token);
      assert.notEqual(lateRow.lease_token, earlyRow.lease_token);
      release();
      const ours = () => delivered.filter((id) => id === early.id || id === late.id);
      await until(() => ours().length >= 2);
      // (The worker also claims the table: the first test's message goes out too.)
      assert.deepEqual(ours().sort(), [early.id, late.id].sort());
      // Settled (after the sink) a moment after the deliveries.
      const settled = async () =>
        (await statusOf(database, early.id)).status === 'sent' &&
        (await statusOf(database, late.id)).status === 'sent';
      for (let i = 0; i < 100 && !(await settled()); i++) {
        await new Promise((r) => setTimeout(r, 10));
      }
      assert.deepEqual(await statusOf(database, early.id), { status: 'sent', attempts: 1 });
      assert.deepEqual(await statusOf(database, late.id), { status: 'sent', attempts: 1 });
    } finally {
      release();
      await queue.close();
    }
  });

  it('delivers what it holds before it closes', async () => {
    const sink = new RecordingSink();
    const { queue } = queueWith(sink);
    queue.startWorker();
    const ids = [];
    for (let i = 0; i < 20; i++)
      ids.push((await commit(database, queue.accept(accountId, `held ${i}`))).id);
    await queue.close();
    assert.equal(sink.delivered.length, 20);
    for (const id of ids) assert.equal((await statusOf(database, id)).status, 'sent');
  });

  it('is not claimable by another worker until its lease runs out, then is claimed again', async () => {
    // Accepted under a worker's lease by a process that dies before delivering it.
    const dead = queueWith(new RecordingSink());
    const { row, change } = acceptMessage(clock, accountId, 'orphan', dead.processor.newLease());
    await commit(database, change);
    assert.equal(row.status, 'queued');

    const sink = new RecordingSink();
    const { processor } = queueWith(sink);
    assert.deepEqual(await processor.claimDue(10), [], 'leased at birth');
    now += options.leaseMs + 1;
    const [claimed] = await processor.claimDue(10);
    assert.equal(claimed?.id, row.id);
    assert.deepEqual(await processor.process(claimed as NonNullable<typeof claimed>), {
      status: 'sent',
    });
    assert.deepEqual(await statusOf(database, row.id), { status: 'sent', attempts: 2 });
    assert.deepEqual(sink.delivered, [row.id]);
  });
});
