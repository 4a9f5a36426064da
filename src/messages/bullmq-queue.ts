import { setImmediate } from 'node:timers/promises';
import { Queue, Worker } from 'bullmq';
import type { FastifyBaseLogger } from 'fastify';
import { Redis } from 'ioredis';
import type { Clock } from '../clock.js';
import type { Outages } from '../ops/outages.js';
import type { Write } from '../store/change.js';
import type { Database } from '../store/database.js';
import type { MessageRow } from '../store/tables.js';
import { acceptMessage, type Message } from './domain.js';
import { HeldMessages } from './held-messages.js';
import type { MessageProcessor, Outcome } from './processor.js';
import type { MessageQueue } from './queue.js';
import { findStranded } from './repository.js';

const QUEUE_NAME = 'messages';
// Rows queued longer than this without a worker taking them are handed to BullMQ again.
const STRANDED_AFTER_MS = 10_000;
const RECONCILE_EVERY_MS = 5_000;

/** One job id per delivery attempt, so adding the same attempt twice is a no-op in BullMQ. */
function jobId(id: string, attempt: number): string {
  return attempt === 0 ? id : `${id}.${attempt}`;
}

export interface BullMqOptions {
  redisUrl: string;
  prefix: string;
  processor: MessageProcessor;
  database: Database;
  clock: Clock;
  concurrency: number;
  log: FastifyBaseLogger;
  outages: Outages;
}

/**
 * BullMQ on Redis: jobs carry message ids to workers on any instance. The row stays the source
 * of truth: a job only claims the row (see MessageProcessor), so a duplicate job is harmless,
 * and a periodic sweep re-adds rows whose job was lost (a crash between commit and enqueue, or
 * Redis away at that moment) and rows whose lease ran out.
 *
 * An instance whose worker runs delivers the messages it accepts itself, claimed at birth and
 * held in memory (HeldMessages), with no job: a message then costs its insert and its settle,
 * not a job's round trips to Redis and a claim. Retries, the messages of instances without a
 * worker, and those accepted while the held ones are many, go through jobs.
 */
export class BullMqQueue implements MessageQueue {
  readonly kind = 'bullmq';
  private worker: Worker | undefined;
  private reconciler: NodeJS.Timeout | undefined;
  private closing: Promise<void> | undefined;
  private readonly held: HeldMessages;
  /** Delivering the held messages, while there are any. */
  private delivering: Promise<void> | undefined;

  private constructor(
    private readonly options: BullMqOptions,
    private readonly queue: Queue,
    private readonly connections: Redis[],
  ) {
    this.held = new HeldMessages(options.processor, options.clock, options.concurrency);
  }

  static create(options: BullMqOptions): BullMqQueue {
    // Adding a job fails fast while Redis is away; the sweep adds it later. The connection is
    // made in the background and retried until Redis answers, so the service may start first:
    // BullMQ waits for it to be ready before its first command.
    const connection = new Redis(options.redisUrl, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      retryStrategy: (attempt) => Math.min(attempt * 100, 2_000),
    });
    connection.on('error', () => {});
    const queue = new Queue(QUEUE_NAME, { connection, prefix: options.prefix });
    queue.on('error', () => {});
    return new BullMqQueue(options, queue, [connection]);
  }

  /** Messages are delivered by this instance's worker from memory when it runs and can take
   * them soon; else they go through Redis, to whichever instance's worker takes them first. */
  accept(accountId: string, text: string): Write<Message> {
    const lease = this.worker && !this.closing ? this.held.leaseForNew() : undefined;
    const { row, change } = acceptMessage(this.options.clock, accountId, text, lease);
    return { ...change, committed: () => this.handOver(row, lease !== undefined) };
  }

  /** A committed message to its worker: this instance's, from memory, or any, through Redis. */
  private async handOver(row: MessageRow, held: boolean): Promise<void> {
    if (held) {
      this.held.hold(row);
      this.delivering ??= this.deliverHeld().finally(() => {
        this.delivering = undefined;
      });
    } else {
      await this.add(row.id, 0, 0);
    }
  }

  /** Delivers the held messages in batches until none is left. */
  private async deliverHeld(): Promise<void> {
    // A turn first, so the messages accepted meanwhile join the first batch.
    await setImmediate();
    while (this.held.size > 0) {
      const rows = this.held.take();
      try {
        const outcomes = await this.options.processor.processBatch(rows);
        await Promise.all(outcomes.map((outcome, i) => this.retryLater(rows[i], outcome)));
      } catch (err) {
        // Their leases keep the rows safe: the sweep hands them to BullMQ once they run out.
        this.options.outages.logUnlessAway(err, 'message worker: delivering held messages failed');
      }
      await setImmediate();
    }
  }

  /** A delivery to try again goes through BullMQ, delayed until it is due. */
  private async retryLater(row: { id: string } | undefined, outcome: Outcome): Promise<void> {
    if (!row || outcome.status !== 'retry') return;
    const delay = outcome.availableAt.getTime() - this.options.clock.now().getTime();
    await this.add(row.id, outcome.attempt, delay);
  }

  private async add(id: string, attempt: number, delayMs: number): Promise<void> {
    try {
      await this.queue.add(
        'deliver',
        { id },
        {
          jobId: jobId(id, attempt),
          delay: Math.max(0, delayMs),
          removeOnComplete: true,
          removeOnFail: true,
          // Database errors while processing: BullMQ retries the job itself.
          attempts: 5,
          backoff: { type: 'exponential', delay: 1_000 },
        },
      );
      this.options.outages.answered('redis');
    } catch (err) {
      // The message is stored: the sweep hands it to BullMQ when Redis is back.
      this.options.outages.failed('redis', err);
    }
  }

  startWorker(): void {
    if (this.worker) return;
    // BullMQ's blocking worker connection must retry forever (maxRetriesPerRequest: null).
    const connection = new Redis(this.options.redisUrl, { maxRetriesPerRequest: null });
    connection.on('error', () => {});
    this.connections.push(connection);
    this.worker = new Worker(
      QUEUE_NAME,
      async (job) => {
        const row = await this.options.processor.claim(String(job.data.id));
        if (!row) return; // already sent, or another worker holds it
        await this.retryLater(row, await this.options.processor.process(row));
      },
      { connection, prefix: this.options.prefix, concurrency: this.options.concurrency },
    );
    // Its errors are those of its Redis connections: noted once per outage.
    this.worker.on('error', (err) => this.options.outages.failed('redis', err));
    // At once, then regularly: an instance restarted after a crash hands on what it left.
    void this.reconcile();
    this.reconciler = setInterval(() => void this.reconcile(), RECONCILE_EVERY_MS);
    this.reconciler.unref();
  }

  private async reconcile(): Promise<void> {
    try {
      const before = new Date(this.options.clock.now().getTime() - STRANDED_AFTER_MS).toISOString();
      for (const row of await findStranded(this.options.database.reader, before, 500)) {
        // A processing row keeps its attempt number: its job (if any) is that attempt's.
        const attempt = row.status === 'processing' ? row.attempts - 1 : row.attempts;
        await this.add(row.id, attempt, 0);
      }
    } catch (err) {
      if (!this.options.outages.databaseFailed(err)) {
        this.options.log.warn({ err }, 'message sweep failed; will try again');
      }
    }
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      clearInterval(this.reconciler);
      // No message is held from now on (accept checks `closing`): deliver those held.
      await this.delivering;
      // Redis away: BullMQ's close would wait for it to answer. Nothing runs without it.
      const away = this.connections.some((connection) => connection.status !== 'ready');
      for (const connection of this.connections) if (away) connection.disconnect();
      await this.worker?.close(away);
      await this.queue.close();
      for (const connection of this.connections) {
        await connection.quit().catch(() => connection.disconnect());
      }
    })();
    return this.closing;
  }
}
