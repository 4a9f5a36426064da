import { Queue, Worker } from 'bullmq';
import type { FastifyBaseLogger } from 'fastify';
import { Redis } from 'ioredis';
import type { Clock } from '../clock.js';
import { acceptMessage, type Message } from '../domain/messages.js';
import type { Outages } from '../ops/outages.js';
import type { Database } from '../store/database.js';
import { findStranded } from '../store/messages-repository.js';
import type { MessageProcessor } from './processor.js';
import type { MessageQueue } from './queue.js';

const QUEUE_NAME = 'messages';
// Rows queued longer than this without a worker taking them are handed to BullMQ again.
const STRANDED_AFTER_MS = 10_000;
const RECONCILE_EVERY_MS = 5_000;

/** One job id per delivery attempt, so adding the same attempt twice is a no-op in BullMQ. */
function jobId(id: string, attempt: number): string {
  return attempt === 0 ? id : `${id}.${attempt}`;
}

/**
 * BullMQ on Redis: jobs carry message ids to workers on any instance. The row stays the source
 * of truth: a job only claims the row (see MessageProcessor), so a duplicate job is harmless,
 * and a periodic sweep re-adds rows whose job was lost (a crash between commit and enqueue, or
 * Redis away at that moment).
 */
export class BullMqQueue implements MessageQueue {
  readonly kind = 'bullmq';
  private worker: Worker | undefined;
  private reconciler: NodeJS.Timeout | undefined;
  private closing: Promise<void> | undefined;

  private constructor(
    private readonly queue: Queue,
    private readonly connections: Redis[],
    private readonly redisUrl: string,
    private readonly prefix: string,
    private readonly processor: MessageProcessor,
    private readonly database: Database,
    private readonly clock: Clock,
    private readonly concurrency: number,
    private readonly log: FastifyBaseLogger,
    private readonly outages: Outages,
  ) {}

  static create(options: {
    redisUrl: string;
    prefix: string;
    processor: MessageProcessor;
    database: Database;
    clock: Clock;
    concurrency: number;
    log: FastifyBaseLogger;
    outages: Outages;
  }): BullMqQueue {
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
    return new BullMqQueue(
      queue,
      [connection],
      options.redisUrl,
      options.prefix,
      options.processor,
      options.database,
      options.clock,
      options.concurrency,
      options.log,
      options.outages,
    );
  }

  /** Messages go through Redis, to whichever instance's worker takes them first. */
  async accept(accountId: string, text: string): Promise<Message> {
    const { message, row } = await acceptMessage(this.database, this.clock, accountId, text);
    await this.add(row.id, 0, 0);
    return message;
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
      this.outages.answered('redis');
    } catch (err) {
      // The message is stored: the sweep hands it to BullMQ when Redis is back.
      this.outages.failed('redis', err);
    }
  }

  startWorker(): void {
    if (this.worker) return;
    // BullMQ's blocking worker connection must retry forever (maxRetriesPerRequest: null).
    const connection = new Redis(this.redisUrl, { maxRetriesPerRequest: null });
    connection.on('error', () => {});
    this.connections.push(connection);
    this.worker = new Worker(
      QUEUE_NAME,
      async (job) => {
        const row = await this.processor.claim(String(job.data.id));
        if (!row) return; // already sent, or another worker holds it
        const outcome = await this.processor.process(row);
        if (outcome.status === 'retry') {
          const delay = outcome.availableAt.getTime() - this.clock.now().getTime();
          await this.add(row.id, outcome.attempt, delay);
        }
      },
      { connection, prefix: this.prefix, concurrency: this.concurrency },
    );
    // Its errors are those of its Redis connections: noted once per outage.
    this.worker.on('error', (err) => this.outages.failed('redis', err));
    this.reconciler = setInterval(() => void this.reconcile(), RECONCILE_EVERY_MS);
    this.reconciler.unref();
  }

  private async reconcile(): Promise<void> {
    try {
      const before = new Date(this.clock.now().getTime() - STRANDED_AFTER_MS).toISOString();
      for (const row of await findStranded(this.database.reader, before, 500)) {
        // A processing row keeps its attempt number: its job (if any) is that attempt's.
        const attempt = row.status === 'processing' ? row.attempts - 1 : row.attempts;
        await this.add(row.id, attempt, 0);
      }
    } catch (err) {
      if (!this.outages.databaseFailed(err)) {
        this.log.warn({ err }, 'message sweep failed; will try again');
      }
    }
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      clearInterval(this.reconciler);
      await this.worker?.close();
      await this.queue.close();
      for (const connection of this.connections) {
        await connection.quit().catch(() => connection.disconnect());
      }
    })();
    return this.closing;
  }
}
