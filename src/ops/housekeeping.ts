import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import { eventsKeptSince } from '../domain/events.js';
import {
  HOUR_MS,
  REQUEST_LOG_MAX_ENTRIES,
  requestHoursKeptSince,
  requestLogKeptSince,
} from '../domain/request-log.js';
import type { Writer } from '../store/database.js';
import { deleteOldDeliveries, deleteOldEvents } from '../store/events-repository.js';
import type { Tx } from '../store/handles.js';
import { deleteExpiredAnswers } from '../store/idempotency-repository.js';
import {
  deleteOldRequestHours,
  deleteOldRequestLog,
  deleteRequestLogOverCap,
} from '../store/request-log-repository.js';
import type { Outages } from './outages.js';

/** How often the chores run, and how many rows one statement deletes at most. */
export const HOUSEKEEPING_EVERY_MS = 5 * 60 * 1000;
const BATCH = 1000;

/** Deletes up to `limit` rows that have run out by `now`; how many it deleted. */
type Chore = (tx: Tx, now: string, limit: number) => Promise<number>;

const eventsBefore = (now: string) => eventsKeptSince(new Date(now));

const logSince = (now: string) => requestLogKeptSince(new Date(now));

/** The hour of the oldest entry kept: counts since then are never fewer than the entries. */
function logHoursSince(now: string): string {
  const ms = Date.parse(logSince(now));
  return new Date(ms - (ms % HOUR_MS)).toISOString();
}

/** What runs out and is deleted: idempotency keys' kept answers (24 h), events and their
 * deliveries (30 days), the request log (7 days, and an account's entries past its newest
 * 10,000) and its hourly counts (7 days). */
const CHORES: Record<string, Chore> = {
  'idempotency keys': deleteExpiredAnswers,
  'webhook deliveries': (tx, now, limit) => deleteOldDeliveries(tx, eventsBefore(now), limit),
  events: (tx, now, limit) => deleteOldEvents(tx, eventsBefore(now), limit),
  'request log segments': (tx, now, limit) => deleteOldRequestLog(tx, logSince(now), limit),
  'request log segments past 10,000': (tx, now, limit) =>
    deleteRequestLogOverCap(tx, logHoursSince(now), REQUEST_LOG_MAX_ENTRIES, limit),
  'request counts': (tx, now, limit) =>
    deleteOldRequestHours(tx, requestHoursKeptSince(new Date(now)), limit),
};

/**
 * Deletes what has run out, in bounded statements so no write holds the store for long. Runs
 * beside the message worker (every instance with WORKER=on, and `animal-store worker`); any
 * number of instances may run it at once, as deleting what has run out is idempotent.
 */
export class Housekeeping {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly database: Writer,
    private readonly clock: Clock,
    private readonly log: FastifyBaseLogger,
    private readonly outages: Outages,
    private readonly everyMs = HOUSEKEEPING_EVERY_MS,
  ) {}

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      this.running ??= this.runOnce().then(
        () => {
          this.running = undefined;
        },
        () => {
          this.running = undefined;
        },
      );
    }, this.everyMs).unref();
  }

  /** Every chore until nothing is left to delete; how many rows each deleted. */
  async runOnce(): Promise<Record<string, number>> {
    const deleted: Record<string, number> = {};
    for (const [name, chore] of Object.entries(CHORES)) {
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
        if (!this.outages.databaseFailed(err)) this.log.error({ err }, `housekeeping: ${name}`);
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
