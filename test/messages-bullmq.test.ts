import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Queue } from 'bullmq';
import { BullMqQueue } from '../src/messages/bullmq-queue.js';
import { acceptMessage, type Message } from '../src/messages/domain.js';
import { MessageProcessor } from '../src/messages/processor.js';
import type { MessageSink } from '../src/messages/sink.js';
import { Outages } from '../src/ops/outages.js';
import { commit } from '../src/store/change.js';
import type { Database } from '../src/store/database.js';
import { databaseOfItsOwn, storeWithAccount } from './helpers.js';

// With Redis, an instance whose worker runs delivers the messages it accepts itself, claimed
// at birth, with no BullMQ job; the others go through jobs, and a held message whose instance
// died is swept back to BullMQ once its lease runs out.

const redisUrl = process.env.TEST_REDIS_URL;
const silent = { info() {}, warn() {}, error() {}, debug() {}, trace() {}, fatal() {} } as never;
const options = { maxAttempts: 3, retryBaseMs: 10, leaseMs: 30_000 };

class RecordingSink implements MessageSink {
  readonly delivered: string[] = [];
  async deliver(message: Message): Promise<void> {
    this.delivered.push(message.id);
  }
}

async function until(check: () => Promise<boolean> | boolean, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
}

describe('BullMQ queue', { skip: !redisUrl && 'needs TEST_REDIS_URL' }, () => {
  let database: Database;
  let accountId: string;
  // A store of its own (another suite's worker, on the real clock, would claim these rows once
  // their leases ran out) and a standing clock, so leases run out only when a test says so.
  let drop = async () => {};
  let now = Date.parse('2000-01-01T00:00:00.000Z');
  const clock = { now: () => new Date(now) };
  const queues: BullMqQueue[] = [];
  const inspectors: Queue[] = [];

  before(async () => {
    const own = await databaseOfItsOwn({ migrated: true });
    drop = own.drop;
    ({ database, accountId } = await storeWithAccount(own.url, clock));
  });
  after(async () => {
    for (const queue of queues) await queue.close();
    for (const inspector of inspectors) await inspector.close();
    await database.close();
    await drop();
  });

  /** A queue on keys of its own, and a BullMQ handle on the same keys to look at its jobs. */
  function queueWith(sink: MessageSink) {
    const prefix = `test-${randomUUID()}:bull`;
    const processor = new MessageProcessor(
      database,
      clock,
      sink,
      options,
      silent,
      new Outages(silent, {}),
    );
    const queue = BullMqQueue.create({
      redisUrl: redisUrl as string,
      prefix,
      processor,
      database,
      clock,
      concurrency: 8,
      log: silent,
      outages: new Outages(silent, {}),
    });
    queues.push(queue);
    const jobs = new Queue('messages', { connection: { url: redisUrl }, prefix });
    inspectors.push(jobs);
    return { queue, processor, jobs };
  }

  async function rowOf(id: string) {
    return database.reader
      .selectFrom('messages')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
  }

  it('delivers what it accepts while its worker runs from memory, with no job', async () => {
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const sink = new RecordingSink();
    const { queue, jobs } = queueWith({
      deliver: async (message) => {
        await gate;
        await sink.deliver(message);
      },
    });
    queue.startWorker();
    const ids: string[] = [];
    for (let i = 0; i < 20; i++)
      ids.push((await commit(database, queue.accept(accountId, `held ${i}`))).id);
    for (const id of ids) {
      const row = await rowOf(id);
      assert.equal(row.status, 'queued', 'stored as the client is told');
      assert.ok(row.lease_token, 'claimed at birth, under the worker lease');
    }
    release();
    await until(async () => {
      const rows = await Promise.all(ids.map(rowOf));
      return rows.every((row) => row.status === 'sent');
    });
    for (const id of ids) assert.equal((await rowOf(id)).status, 'sent');
    assert.deepEqual(sink.delivered.sort(), [...ids].sort(), 'each delivered once');
    const counts = await jobs.getJobCounts('waiting', 'delayed', 'active', 'completed');
    assert.deepEqual(counts, { waiting: 0, delayed: 0, active: 0, completed: 0 }, 'no job');
    await queue.close(); // its sweeps would take the next tests' rows
  });

  it('hands a message to BullMQ when its own worker does not run', async () => {
    const { queue, jobs } = queueWith(new RecordingSink());
    const message = await commit(database, queue.accept(accountId, 'for any worker'));
    const row = await rowOf(message.id);
    assert.equal(row.lease_token, null);
    assert.equal(await jobs.getJobCountByTypes('waiting'), 1);
    assert.ok(await jobs.getJob(message.id), 'the job is the message id');
  });

  it('sweeps a held message of an instance that died to BullMQ once its lease runs out', async () => {
    // Accepted under a lease by an instance that died before delivering it.
    const dead = queueWith(new RecordingSink());
    const { row, change } = acceptMessage(clock, accountId, 'orphan', dead.processor.newLease());
    await commit(database, change);
    now += options.leaseMs + 11_000; // the lease, and the sweep's grace, run out
    const sink = new RecordingSink();
    const { queue } = queueWith(sink);
    queue.startWorker(); // sweeps at once
    await until(async () => (await rowOf(row.id)).status === 'sent');
    assert.equal((await rowOf(row.id)).status, 'sent');
    assert.ok(sink.delivered.includes(row.id));
  });
});
