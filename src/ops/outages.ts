import type { Log } from '../log.js';
import { storeTrouble } from '../store/store-errors.js';
import { StartupError, waitingHint } from './startup-errors.js';

/** The services an instance depends on, besides itself. */
export type Dependency = 'database' | 'redis';

/** A dependency as the log names it (never with a password) and a trivial call to it. */
export interface Watched {
  /** "PostgreSQL at db:5432/animal_store", "Redis at cache:6379". */
  name: string;
  /** Resolves when it answers; rejects while it is away (within a short time). */
  probe: () => Promise<unknown>;
  /** The service serves without it (RATE_LIMIT_ON_STORE_ERROR=open): not waited for. */
  optional?: boolean;
  /** The setting that names it (DATABASE_URL, REDIS_URL), for the waiting line's hint. */
  setting?: string;
  /** A failure waiting will not fix (a missing database, a wrong password), as the sentence
   * to stop with; undefined for one worth waiting out. */
  permanent?: (err: unknown) => string | undefined;
}

const FALLBACK_NAMES: Record<Dependency, string> = { database: 'The database', redis: 'Redis' };

/** First retry this long after a failed probe; each next one waits twice as long, up to
 * STARTUP_RETRY_MAX_MS while starting (each try is logged) and OUTAGE_PROBE_MAX_MS during an
 * outage (unlogged: its end is noticed within a second). */
const RETRY_FIRST_MS = 250;
const STARTUP_RETRY_MAX_MS = 5_000;
const OUTAGE_PROBE_MAX_MS = 1_000;

/** Told when a dependency goes away (an outage begins) and when it answers (the first time too). */
export interface OutageObserver {
  /** At the start: the dependency has not answered yet. */
  dependencyUnheard(dependency: Dependency): void;
  dependencyDown(dependency: Dependency): void;
  dependencyUp(dependency: Dependency): void;
}

/**
 * Whether each dependency answers, as the requests and the worker find it. An outage is logged
 * once when it begins and once when it ends (with its length), never per refused request; while
 * it lasts, the dependency is probed with back-off, so its end is noticed even with no traffic.
 */
export class Outages {
  /** Since when (ms) each dependency that is away has been. */
  private readonly since = new Map<Dependency, number>();
  /** The dependencies that have not answered yet, since the start: not up, yet no outage. */
  private readonly unheard: Set<Dependency>;
  private readonly waits = new Set<{ timer: NodeJS.Timeout; resolve: () => void }>();
  private closed = false;

  constructor(
    private readonly log: Log,
    private readonly watched: Partial<Record<Dependency, Watched>>,
    private readonly observer?: OutageObserver,
  ) {
    this.unheard = new Set(Object.keys(watched) as Dependency[]);
    for (const dependency of this.unheard) observer?.dependencyUnheard(dependency);
  }

  /** A call to the dependency failed because it could not be reached. */
  failed(dependency: Dependency, err: unknown): void {
    if (this.since.has(dependency)) return;
    this.since.set(dependency, Date.now());
    this.observer?.dependencyDown(dependency);
    this.log.error(
      { dependency, error: brief(err) },
      `${this.name(dependency)} is unreachable: requests that need it answer 503 until it is back`,
    );
    void this.probeUntilBack(dependency);
  }

  /**
   * A database call failed: when the database is away (or too busy), the outage is noted and
   * this answers true; otherwise false, and the error is the caller's to log. A database that
   * cannot store (disk full or failing) is the caller's to log too: someone has to act.
   */
  databaseFailed(err: unknown): boolean {
    const trouble = storeTrouble(err);
    if (trouble === 'unreachable') this.failed('database', err);
    return trouble === 'unreachable' || trouble === 'busy';
  }

  /** A database call failed and its caller will try again: logged as an error, unless the
   * database is away (an outage, logged once by `databaseFailed`). */
  logUnlessAway(err: unknown, message: string, fields?: object): void {
    if (!this.databaseFailed(err)) this.log.error({ err, ...fields }, message);
  }

  /** A call to the dependency succeeded. Cheap when nothing is away (every request calls it). */
  answered(dependency: Dependency): void {
    if (this.since.size === 0 && this.unheard.size === 0) return;
    if (this.unheard.delete(dependency)) this.observer?.dependencyUp(dependency);
    const since = this.since.get(dependency);
    if (since === undefined) return;
    this.since.delete(dependency);
    this.observer?.dependencyUp(dependency);
    // Warn, not info: whoever runs at LOG_LEVEL=warn sees the outage end as well as begin.
    this.log.warn(
      { dependency, outageMs: Date.now() - since },
      `${this.name(dependency)} is reachable again`,
    );
  }

  isDown(dependency: Dependency): boolean {
    return this.since.has(dependency);
  }

  /**
   * Resolves true once the dependency answers (at once when it is not watched, or optional),
   * trying again with back-off and logging one line per failed try; false if closed first.
   * Throws a StartupError for a failure that waiting will not fix (`Watched.permanent`).
   * For the start, when the dependencies may come up after the service.
   */
  async untilAnswers(dependency: Dependency): Promise<boolean> {
    const watched = this.watched[dependency];
    if (watched === undefined || watched.optional) return true;
    for (let attempt = 1; !this.closed; attempt++) {
      try {
        await watched.probe();
        this.answered(dependency);
        return true;
      } catch (err) {
        if (this.closed) break;
        const fatal = watched.permanent?.(err);
        if (fatal !== undefined) throw new StartupError(fatal);
        const hint = watched.setting ? ` (${waitingHint(err, watched.setting)})` : '';
        const delayMs = retryDelayMs(attempt, STARTUP_RETRY_MAX_MS);
        this.log.warn(
          { dependency, attempt, error: brief(err), retryInMs: delayMs },
          `${watched.name} does not answer yet${hint}; trying again in ${delayMs / 1000} s`,
        );
        await this.sleep(delayMs);
      }
    }
    return false;
  }

  /** Stops probing and waiting. Safe to call more than once. */
  close(): void {
    this.closed = true;
    for (const wait of this.waits) {
      clearTimeout(wait.timer);
      wait.resolve();
    }
    this.waits.clear();
  }

  private async probeUntilBack(dependency: Dependency): Promise<void> {
    const probe = this.watched[dependency]?.probe;
    if (probe === undefined) return;
    for (let attempt = 1; this.since.has(dependency) && !this.closed; attempt++) {
      await this.sleep(retryDelayMs(attempt, OUTAGE_PROBE_MAX_MS));
      if (!this.since.has(dependency) || this.closed) return;
      try {
        await probe();
        this.answered(dependency);
      } catch {
        // Still away; the next probe waits longer.
      }
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wait = {
        timer: setTimeout(() => {
          this.waits.delete(wait);
          resolve();
        }, ms),
        resolve,
      };
      this.waits.add(wait);
    });
  }

  private name(dependency: Dependency): string {
    return this.watched[dependency]?.name ?? FALLBACK_NAMES[dependency];
  }
}

function retryDelayMs(attempt: number, maxMs: number): number {
  return Math.min(RETRY_FIRST_MS * 2 ** (attempt - 1), maxMs);
}

/** What an operator needs of the error that began an outage: no stack, no connection string. */
export function brief(err: unknown): { message: string; code?: string } {
  if (!(err instanceof Error)) return { message: String(err) };
  const first =
    err instanceof AggregateError && err.errors[0] instanceof Error ? err.errors[0] : err;
  const { code } = first as { code?: unknown };
  return typeof code === 'string' ? { message: first.message, code } : { message: first.message };
}
