import { setImmediate } from 'node:timers/promises';
import type { FastifyBaseLogger } from 'fastify';
import type { MessageProcessor } from './processor.js';
import type { MessageQueue } from './queue.js';

const POLL_MS = 250;

/**
 * The embedded queue: the messages table itself. A worker claims due rows in batches (see
 * claimDue); messages accepted by this process wake it at once, others are found by polling.
 * A worker killed mid-message leaves a lease that runs out, and the row is claimed again.
 */
export class TableQueue implements MessageQueue {
  readonly kind = 'table';
  private running = false;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;

  constructor(
    private readonly processor: MessageProcessor,
    private readonly concurrency: number,
    private readonly log: FastifyBaseLogger,
  ) {}

  async enqueued(): Promise<void> {
    this.wake?.();
  }

  startWorker(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  async close(): Promise<void> {
    this.running = false;
    this.wake?.();
    await this.loop;
  }

  private async run(): Promise<void> {
    while (this.running) {
      let claimed = 0;
      try {
        const rows = await this.processor.claimDue(this.concurrency);
        claimed = rows.length;
        if (rows.length > 0) await this.processor.processBatch(rows);
      } catch (err) {
        // The database may be away for a moment; the leases keep the claimed rows safe.
        this.log.error({ err }, 'message worker: claim or settle failed');
      }
      if (claimed === 0 && this.running) await this.idle();
      // A turn of the event loop between claims: with a backlog, claim and settle would
      // otherwise follow each other in promise callbacks alone, and requests would wait.
      else await setImmediate();
    }
  }

  private idle(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, POLL_MS);
      const self = this;
      function done() {
        clearTimeout(timer);
        self.wake = undefined;
        resolve();
      }
      this.wake = done;
    });
  }
}
