import { setImmediate } from 'node:timers/promises';
import { type Clock, Wakeable } from '../clock.js';
import type { Outages } from '../ops/outages.js';
import type { Write } from '../store/change.js';
import { acceptMessage, type Message } from './domain.js';
import { HeldMessages } from './held-messages.js';
import type { MessageProcessor } from './processor.js';
import type { MessageQueue } from './queue.js';

const POLL_MS = 250;
/** After a failed claim or settle the worker waits POLL_MS, twice as long after each next
 * failure in a row, up to this. */
const BACKOFF_MAX_MS = 5_000;

/**
 * The embedded queue: the messages table itself. Messages this process accepts while its
 * worker runs are claimed at birth and handed to it in memory (HeldMessages); the others
 * (another process's, retries that come due, leases run out) are claimed from the table in
 * batches (see claimDue), found by polling. A worker killed mid-message leaves a lease that
 * runs out, and the row is claimed again.
 */
export class TableQueue implements MessageQueue {
  readonly kind = 'table';
  private running = false;
  private loop: Promise<void> | undefined;
  /** The loop's wait, ended by new work and by close(). */
  private readonly idle = new Wakeable();
  /** Committed messages claimed at birth, waiting for the worker. */
  private readonly held: HeldMessages;

  constructor(
    private readonly processor: MessageProcessor,
    private readonly clock: Clock,
    private readonly concurrency: number,
    private readonly outages: Outages,
  ) {
    this.held = new HeldMessages(processor, clock, concurrency);
  }

  accept(accountId: string, text: string): Write<Message> {
    const lease = this.running ? this.held.leaseForNew() : undefined;
    const { row, change } = acceptMessage(this.clock, accountId, text, lease);
    return {
      ...change,
      committed: async () => {
        // Accepted under one of our leases: ours to deliver, from memory.
        if (lease) this.held.hold(row);
        this.idle.wake();
      },
    };
  }

  startWorker(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  /** Stops claiming; the messages already held are delivered first. */
  async close(): Promise<void> {
    this.running = false;
    this.idle.wake();
    await this.loop;
    // Accepted while the loop was ending: delivered now rather than when their lease runs out.
    if (this.held.size > 0) {
      await this.processor
        .processBatch(this.held.take(this.held.size))
        .catch((err: unknown) =>
          this.outages.logUnlessAway(err, 'message worker: settle at shutdown failed'),
        );
    }
  }

  private async run(): Promise<void> {
    let claimedMs = Number.NEGATIVE_INFINITY;
    let failures = 0;
    while (this.running || this.held.size > 0) {
      let worked = 0;
      let failed = false;
      try {
        const held = this.held.take();
        if (held.length > 0) await this.processor.processBatch(held);
        worked = held.length;
        // The table is claimed from when nothing is held, and at least as often as an idle
        // worker polls while messages keep coming.
        const nowMs = performance.now();
        if (this.running && (held.length === 0 || nowMs - claimedMs >= POLL_MS)) {
          claimedMs = nowMs;
          const rows = await this.processor.claimDue(this.concurrency);
          if (rows.length > 0) await this.processor.processBatch(rows);
          worked += rows.length;
        }
      } catch (err) {
        // The database may be away for a moment (noted once per outage); the leases keep the
        // claimed rows safe, and the worker backs off until it answers.
        this.outages.logUnlessAway(err, 'message worker: claim or settle failed');
        failed = true;
      }
      failures = failed ? failures + 1 : 0;
      if (failed) {
        await this.idle.sleep(Math.min(POLL_MS * 2 ** (failures - 1), BACKOFF_MAX_MS));
      } else if (worked === 0 && this.running) await this.idle.sleep(POLL_MS);
      // A turn of the event loop between batches: with a backlog, claim and settle would
      // otherwise follow each other in promise callbacks alone, and requests would wait.
      else await setImmediate();
    }
  }
}
