import { BoundedCache, type CacheStats } from '../bounded-cache.js';
import { type Clock, millisOf } from '../clock.js';
import type { Limits } from '../domain/plans.js';
import { andThen, type MaybePromise } from '../maybe.js';
import type { Counted, CounterStore, HitInput, Versions } from './store.js';

export type WindowName = 'minute' | 'day';

export interface WindowState {
  name: WindowName;
  /** Window length in seconds. */
  seconds: number;
  limit: number;
  /** Requests counted in the window so far. */
  used: number;
  remaining: number;
  /** Unix seconds at which the window refills. */
  resetAt: number;
}

export interface Decision {
  allowed: boolean;
  /** The clock reading the decision was made at (ms). */
  nowMs: number;
  /** Why a request was refused. */
  refusal?: 'rate_limited' | 'key_banned';
  /** Whole seconds to wait, at least 1, when refused. */
  retryAfter?: number;
  /** This request began a ban, which ends at `bannedUntilMs`. */
  banStarted?: { untilMs: number };
  windows: WindowState[];
  /** The window with the fewest requests left: the one the X-RateLimit headers describe. */
  tightest: WindowState;
  /** The windows as a quota policy (draft-ietf-httpapi-ratelimit-headers), the same for every
   * request of a plan: `"minute";q=60;w=60, "day";q=1000;w=86400`. */
  policy: string;
  /** The account's versions as the shared store held them when counting (Redis only). */
  versions?: Versions;
}

/** Nothing was counted: the account's keys version was not the one the caller verified under.
 * `versions` says what it is now; undefined when the store could not be asked at all (and
 * requests are let through uncounted: RATE_LIMIT_ON_STORE_ERROR=open). */
export interface Stale {
  stale: true;
  versions: Versions | undefined;
}

/** (Subject, ban owner) pairs whose windows are kept at most; past it the oldest go first. */
const KEPT_SUBJECTS = 10_000;

/** One window as it applies at the time of a request. */
interface Window {
  name: WindowName;
  limit: number;
  seconds: number;
  /** The window's number since the epoch. */
  index: number;
  endMs: number;
}

/**
 * What a subject is counted with in the current windows: built once per subject and window,
 * then reused by every request in them. A key string built anew has its hash computed again on
 * every Map (or Redis client) use, which cost more than the whole count.
 */
interface SubjectWindows {
  limits: Limits;
  windows: Window[];
  /** The span in which all of the windows stand (ms). */
  fromMs: number;
  untilMs: number;
  input: HitInput;
  policy: string;
}

/** Who is counted (the account, or the client IP without a valid key) and who is banned. */
export interface Subject {
  /** Budget owner: `acct_…` or `ip:…`. */
  id: string;
  /** Ban owner: the API key, or the IP. */
  banId: string;
  /** An account whose versions are read with its counts (the shared mode; see
   * HitInput.versionKeys). */
  withVersions?: boolean;
  /** A budget of its own beside the subject's (a publishable key's, in its account or at an
   * address), counted apart from the subject's own. */
  pool?: string;
}

/**
 * After a window's first refusal, how long refusals are no strikes toward a ban: the requests
 * a client (or several on one key) had in flight when the first 429 came back. A second is
 * many round trips on any network; a client that keeps sending after it is banned as before.
 */
export const BAN_GRACE_MS = 1_000;

export interface RateLimiterOptions {
  banThreshold: number;
  banSeconds: number;
  /** BAN_GRACE_MS unless a test says otherwise. */
  banGraceMs?: number;
  /** Window lengths; the defaults are the UTC minute and the UTC day. Tests shorten them. */
  windowSeconds?: Record<WindowName, number>;
  /** Prefix of every counter key, so deployments (or test runs) sharing a Redis stay apart. */
  keyPrefix?: string;
}

/**
 * Fixed windows aligned to the clock: a window of S seconds starts at a multiple of S since
 * the Unix epoch, so the minute window is the current UTC minute and the day window the current
 * UTC calendar day (Unix time has no leap seconds).
 */
export class RateLimiter {
  private readonly windowSeconds: Record<WindowName, number>;
  private readonly prefix: string;
  /** By subject and ban owner: an account's keys used side by side each keep theirs. */
  private readonly kept = new BoundedCache<string, SubjectWindows>('limit windows', {
    maxEntries: KEPT_SUBJECTS,
  });
  /** What it keeps, for /metrics. */
  readonly caches: readonly CacheStats[] = [this.kept];

  /** The clock's time in ms: read on every request. */
  private readonly millis: () => number;

  constructor(
    readonly store: CounterStore,
    clock: Clock,
    private readonly options: RateLimiterOptions,
  ) {
    this.millis = millisOf(clock);
    this.windowSeconds = options.windowSeconds ?? { minute: 60, day: 86_400 };
    this.prefix = options.keyPrefix ?? 'as:rl:';
  }

  /**
   * Counts one request of the subject's: at once with the memory store. With `expectKeys`
   * (an account's keys version something was verified under), a store that keeps versions
   * counts only while it stands, and answers Stale otherwise.
   */
  check(subject: Subject, limits: Limits): MaybePromise<Decision>;
  check(
    subject: Subject,
    limits: Limits,
    expectKeys: string | undefined,
  ): MaybePromise<Decision | Stale>;
  check(subject: Subject, limits: Limits, expectKeys?: string): MaybePromise<Decision | Stale> {
    const nowMs = this.millis();
    const current = this.windowsOf(subject, limits, nowMs);
    const hit = this.store.hit(current.input, nowMs, expectKeys);
    return andThen(hit, (result) =>
      result.outcome === 'stale'
        ? { stale: true, versions: result.versions }
        : this.decide(current, nowMs, result),
    );
  }

  /**
   * Tells every instance sharing the store that an account's keys or plan (`keys`), or its
   * catalogue (`data`; `appends` when only appended to), changed: what they keep of it is
   * read again from their next request.
   */
  changed(accountId: string, what: keyof Versions): Promise<void> {
    return this.store.bump(this.versionKey(accountId, what));
  }

  /** The windows as they stand for a subject, counting nothing (the portal's usage bars). */
  async usage(subjectId: string, limits: Limits): Promise<WindowState[]> {
    const nowMs = this.millis();
    const specs = this.windows(limits, nowMs);
    const base = this.keyBase(subjectId);
    const counts = await this.store.read(
      specs.map((w) => this.counterKey(base, w)),
      nowMs,
    );
    return specs.map((w, i) => this.state(w, counts[i] ?? 0));
  }

  /** The bans of a subject's ban owners (its keys) in force now: ban owner → when it ends (ms). */
  async bans(subjectId: string, banIds: string[]): Promise<Map<string, number>> {
    const base = this.keyBase(subjectId);
    const ends = await this.store.banEnds(
      banIds.map((banId) => `${base}:ban:${banId}`),
      this.millis(),
    );
    const bans = new Map<string, number>();
    banIds.forEach((banId, i) => {
      const until = ends[i];
      if (until !== undefined) bans.set(banId, until);
    });
    return bans;
  }

  close(): Promise<void> {
    return this.store.close();
  }

  private decide(current: SubjectWindows, nowMs: number, result: Counted): Decision {
    const { windows: specs, policy } = current;
    const windows: WindowState[] = [];
    let tightest: WindowState | undefined;
    for (let i = 0; i < specs.length; i++) {
      const state = this.state(specs[i] as Window, result.counts[i] ?? 0);
      windows.push(state);
      if (
        tightest === undefined ||
        state.remaining < tightest.remaining ||
        (state.remaining === tightest.remaining && state.resetAt > tightest.resetAt)
      ) {
        tightest = state;
      }
    }
    if (tightest === undefined) throw new Error('a rate limit without windows');
    const secondsUntil = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

    const { versions } = result;
    if (result.outcome === 'allowed') {
      return { allowed: true, nowMs, windows, tightest, policy, versions };
    }
    if (result.outcome === 'banned') {
      return {
        allowed: false,
        nowMs,
        refusal: 'key_banned',
        retryAfter: secondsUntil(result.banMsLeft),
        ...(result.started && { banStarted: { untilMs: nowMs + result.banMsLeft } }),
        windows,
        tightest,
        policy,
        versions,
      };
    }
    const { index } = result;
    const full = specs[index] ?? specs[0];
    return {
      allowed: false,
      nowMs,
      refusal: 'rate_limited',
      retryAfter: secondsUntil((full?.endMs ?? nowMs) - nowMs),
      windows,
      tightest: windows[index] ?? tightest,
      policy,
      versions,
    };
  }

  /** The subject's windows, keys and counters now (for this ban owner): those kept, unless a
   * window has turned or the limits changed since they were built. */
  private windowsOf(subject: Subject, limits: Limits, nowMs: number): SubjectWindows {
    // Neither an id nor a ban owner holds a space.
    const key =
      subject.pool === undefined
        ? `${subject.id} ${subject.banId}`
        : `${subject.id} ${subject.banId} ${subject.pool}`;
    const kept = this.kept.get(
      key,
      (kept) =>
        nowMs < kept.untilMs &&
        nowMs >= kept.fromMs &&
        kept.limits.perMinute === limits.perMinute &&
        kept.limits.perDay === limits.perDay,
    );
    if (kept !== undefined) return kept;
    const windows = this.windows(limits, nowMs);
    const base = this.keyBase(subject.id);
    const current: SubjectWindows = {
      limits,
      windows,
      fromMs: Math.max(...windows.map((w) => w.endMs - w.seconds * 1000)),
      untilMs: Math.min(...windows.map((w) => w.endMs)),
      input: {
        counters: windows.map((w) => ({
          key: this.counterKey(subject.pool === undefined ? base : `${base}:${subject.pool}`, w),
          limit: w.limit,
          // A whole window from now, not just to the window's end: a counter then outlives its
          // window by every instance's clock (and by Redis's), even when they disagree a little.
          ttlMs: (w.seconds + 1) * 1000,
        })),
        strikeKeys: windows.map((w) => `${base}:strikes:${subject.banId}:${w.name}:${w.index}`),
        sinceKeys: windows.map((w) => `${base}:refused:${subject.banId}:${w.name}:${w.index}`),
        banKey: `${base}:ban:${subject.banId}`,
        banThreshold: this.options.banThreshold,
        banGraceMs: this.options.banGraceMs ?? BAN_GRACE_MS,
        banMs: this.options.banSeconds * 1000,
        ...(subject.withVersions && {
          versionKeys: [
            this.versionKey(subject.id, 'keys'),
            this.versionKey(subject.id, 'data'),
            this.versionKey(subject.id, 'appends'),
          ],
        }),
      },
      policy: windows.map((w) => `"${w.name}";q=${w.limit};w=${w.seconds}`).join(', '),
    };
    this.kept.set(key, current);
    return current;
  }

  private versionKey(accountId: string, what: keyof Versions): string {
    return `${this.keyBase(accountId)}:version:${what}`;
  }

  // Windows are named by their number since the epoch (a small integer: cheap to print).
  private counterKey(base: string, w: Window): string {
    return `${base}:${w.name}:${w.index}`;
  }

  // The {…} hash tag keeps one subject's keys in one Redis Cluster slot, as scripts need.
  private keyBase(subjectId: string): string {
    return `${this.prefix}{${subjectId}}`;
  }

  private windows(limits: Limits, nowMs: number) {
    return [
      this.window('minute', limits.perMinute, nowMs),
      this.window('day', limits.perDay, nowMs),
    ];
  }

  private state(w: Window, used: number): WindowState {
    return {
      name: w.name,
      seconds: w.seconds,
      limit: w.limit,
      used,
      remaining: Math.max(0, w.limit - used),
      resetAt: w.endMs / 1000,
    };
  }

  private window(name: WindowName, limit: number, nowMs: number): Window {
    const seconds = this.windowSeconds[name];
    const lengthMs = seconds * 1000;
    const index = Math.floor(nowMs / lengthMs);
    return { name, limit, seconds, index, endMs: (index + 1) * lengthMs };
  }
}
