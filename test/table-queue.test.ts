import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { acceptMessage, type Message } from '../src/domain/messages.js';
import { Outages } from '../src/ops/outages.js';
import { MessageProcessor } from '../src/queue/processor.js';
import type { MessageSink } from '../src/queue/sink.js';
import { TableQueue } from '../src/queue/table-queue.js';
import type { Database } from '../src/store/database.js';
import { storeWithAccount, testDatabaseUrl } from './helpers.js';

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
  const { url, cleanup } = testDatabaseUrl();
  let database: Database;
  let accountId: string;
  // A standing clock in the year 2000, so no other test's rows are due or leased by it.
  let now = Date.parse('2000-01-01T00:00:00.000Z');
  const clock = { now: () => new Date(now) };

  before(async () => {
    ({ database, accountId } = await storeWithAccount(url, clock));
  });
  after(async () => {
    await database.close();
    cleanup();
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
      queue: new TableQueue(processor, clock, 8, silent, new Outages(silent, {})),
    };
  }

  async function accept(queue: TableQueue, text: string) {
    const lease = queue.leaseForNew();
    const { row } = await database.write((tx) => acceptMessage(tx, clock, accountId, text, lease));
    return row;
  }

  it('leases nothing while its worker is stopped', () => {
    const { queue } = queueWith(new RecordingSink());
    assert.equal(queue.leaseForNew(), undefined);
  });

  it('sends each message once, at once, even after newer leases were issued', async () => {
    const sink = new RecordingSink();
    const { queue } = queueWith(sink);
    queue.startWorker();
    try {
      const first = queue.leaseForNew();
      const early = await database.write((tx) =>
        acceptMessage(tx, clock, accountId, 'early', first),
      );
      assert.equal(early.row.status, 'processing');
      assert.equal(early.message.status, 'queued', 'the client is told queued');
      now += 1_500; // the next message gets a new lease before the first is handed over
      const late = await accept(queue, 'late');
      assert.notEqual(late.lease_token, first?.token);
      await queue.enqueued(late);
      await queue.enqueued(early.row);
      await until(() => sink.delivered.length >= 2);
      assert.deepEqual(sink.delivered.sort(), [early.row.id, late.id].sort());
      assert.deepEqual(await statusOf(database, early.row.id), { status: 'sent', attempts: 1 });
      assert.deepEqual(await statusOf(database, late.id), { status: 'sent', attempts: 1 });
    } finally {
      await queue.close();
    }
  });

  it('delivers what it holds before it closes', async () => {
    const sink = new RecordingSink();
    const { queue } = queueWith(sink);
    queue.startWorker();
    const rows = [];
    for (let i = 0; i < 20; i++) rows.push(await accept(queue, `held ${i}`));
    for (const row of rows) await queue.enqueued(row);
    await queue.close();
    assert.equal(sink.delivered.length, 20);
    for (const row of rows) assert.equal((await statusOf(database, row.id)).status, 'sent');
  });

  it('is not claimable by another worker until its lease runs out, then is claimed again', async () => {
    const dead = queueWith(new RecordingSink());
    dead.queue.startWorker();
    const row = await accept(dead.queue, 'orphan');
    // The accepting process dies before handing it over: nothing delivers it.
    await dead.queue.close();

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
