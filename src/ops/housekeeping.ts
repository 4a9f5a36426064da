import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import type { Writer } from '../store/database.js';
import type { Tx } from '../store/handles.js';
import { deleteExpiredAnswers } from '../store/idempotency-repository.js';
import type { Outages } from './outages.js';

/** How often the chores run, and how many rows one statement deletes at most. */
export const HOUSEKEEPING_EVERY_MS = 5 * 60 * 1000;
const BATCH = 1000;

/** Deletes up to `limit` rows that have run out by `now`; how many it deleted. */
export type Chore = (tx: Tx, now: string, limit: number) => Promise<number>;

/** The core's own: the idempotency keys' kept answers (24 h). The capabilities add theirs
 * (src/capability.ts). */
export const CORE_CHORES: Readonly<Record<string, Chore>> = {
  'idempotency keys': deleteExpiredAnswers,
};

/**
 * Deletes what has run out, in bounded statements so no write holds the store for long. Runs
 * beside the message worker (every instance with WORKER=on, and `animal-store worker`); any
 * number of instances may run it at once, as deleting what has run out is idempotent.
 */
export class Housekeeping {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  /**
   * @param chores what runs out and is deleted, by name: the core's (CORE_CHORES) and every
   *   capability's
   */
  constructor(
    private readonly database: Writer,
    private readonly clock: Clock,
    private readonly log: FastifyBaseLogger,
    private readonly outages: Outages,
    private readonly chores: Readonly<Record<string, Chore>>,
    private readonly everyMs = HOUSEKEEPING_EVERY_MS,
  ) {}

  start(): void {
    if (this.timer) return;
    const done = () => {
      this.running = undefined;
    };
    this.timer = setInterval(() => {
      this.running ??= this.runOnce().then(done, done);
    }, this.everyMs).unref();
  }

  /** Every chore until nothing is left to delete; how many rows each deleted. */
  async runOnce(): Promise<Record<string, number>> {
    const deleted: Record<string, number> = {};
    for (const [name, chore] of Object.entries(this.chores)) {
      deleted[name] = 0;
      try {
        for (;;) {
          const now = this.clock.now().toISOString();
          const count = await this.database.write((tx) => chore(tx, now, BATCH), {
            blind: true,
          });
          deleted[name] += count;
          if (count < BATCH) break;
        }
      } catch (err) {
        // Tried again at the next turn; an outage is logged once by Outages.
        this.outages.logUnlessAway(err, `housekeeping: ${name}`);
      }
    }
    const total = Object.values(deleted).reduce((sum, n) => sum + n, 0);
    if (total > 0) this.log.info({ deleted }, 'housekeeping: deleted what had run out');
    return deleted;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }
}
