import type { Clock } from '../clock.js';
import type { Limits } from '../domain/plans.js';
import { andThen, type MaybePromise } from '../maybe.js';
import type { CounterStore, HitResult } from './store.js';

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
  windows: WindowState[];
  /** The window with the fewest requests left: the one the X-RateLimit headers describe. */
  tightest: WindowState;
}

/** Subjects whose keys are kept at most; past it the cache starts again. */
const KEPT_SUBJECTS = 10_000;

interface SubjectKeys {
  /** The windows' keys, joined: what the keys below were built for. */
  windows: string;
  banId: string;
  counters: string[];
  strikes: string[];
  ban: string;
}

/** One window as it applies at the time of a request. */
interface Window {
  name: WindowName;
  limit: number;
  seconds: number;
  /** The counter's key: the window's name and its number since the epoch. */
  key: string;
  endMs: number;
}

/** Who is counted (the account, or the client IP without a valid key) and who is banned. */
export interface Subject {
  /** Budget owner: `acct_…` or `ip:…`. */
  id: string;
  /** Ban owner: the API key, or the IP. */
  banId: string;
}

export interface RateLimiterOptions {
  banThreshold: number;
  banSeconds: number;
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
  private readonly keys = new Map<string, SubjectKeys>();

  constructor(
    readonly store: CounterStore,
    private readonly clock: Clock,
    private readonly options: RateLimiterOptions,
  ) {
    this.windowSeconds = options.windowSeconds ?? { minute: 60, day: 86_400 };
    this.prefix = options.keyPrefix ?? 'as:rl:';
  }

  /** Counts one request of the subject's: at once with the memory store. */
  check(subject: Subject, limits: Limits): MaybePromise<Decision> {
    const nowMs = this.clock.now().getTime();
    const specs = this.windows(limits, nowMs);
    const keys = this.keysOf(subject, specs);
    const hit = this.store.hit({
      nowMs,
      counters: specs.map((w, i) => ({
        key: keys.counters[i] as string,
        limit: w.limit,
        // A whole window from now, not just to the window's end: a counter then outlives its
        // window by every instance's clock (and by Redis's), even when they disagree a little.
        ttlMs: (w.seconds + 1) * 1000,
      })),
      strikeKeys: keys.strikes,
      banKey: keys.ban,
      banThreshold: this.options.banThreshold,
      banMs: this.options.banSeconds * 1000,
    });
    return andThen(hit, (result) => this.decide(specs, nowMs, result));
  }

  /** The windows as they stand for a subject, counting nothing (the portal's usage bars). */
  async usage(subjectId: string, limits: Limits): Promise<WindowState[]> {
    const nowMs = this.clock.now().getTime();
    const specs = this.windows(limits, nowMs);
    const base = this.keyBase(subjectId);
    const counts = await this.store.read(
      specs.map((w) => `${base}:${w.key}`),
      nowMs,
    );
    return specs.map((w, i) => this.state(w, counts[i] ?? 0));
  }

  close(): Promise<void> {
    return this.store.close();
  }

  private decide(specs: Window[], nowMs: number, result: HitResult): Decision {
    const windows = specs.map((w, i) => this.state(w, result.counts[i] ?? 0));
    const tightest = windows.reduce((a, b) =>
      b.remaining < a.remaining || (b.remaining === a.remaining && b.resetAt > a.resetAt) ? b : a,
    );
    const secondsUntil = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

    if (result.outcome === 'allowed') return { allowed: true, nowMs, windows, tightest };
    if (result.outcome === 'banned') {
      return {
        allowed: false,
        nowMs,
        refusal: 'key_banned',
        retryAfter: secondsUntil(result.banMsLeft),
        windows,
        tightest,
      };
    }
    const full = specs[result.index] ?? specs[0];
    return {
      allowed: false,
      nowMs,
      refusal: 'rate_limited',
      retryAfter: secondsUntil((full?.endMs ?? nowMs) - nowMs),
      windows,
      tightest: windows[result.index] ?? tightest,
    };
  }

  /**
   * The subject's keys in the current windows. Kept between requests: a string built anew has
   * its hash computed again on every Map (or Redis client) use, which cost more than the whole
   * count. Rebuilt when a window turns or the subject's ban owner changes.
   */
  private keysOf(subject: Subject, specs: Window[]): SubjectKeys {
    const windows = specs.map((w) => w.key).join(' ');
    const kept = this.keys.get(subject.id);
    if (kept && kept.windows === windows && kept.banId === subject.banId) return kept;
    const base = this.keyBase(subject.id);
    const keys = {
      windows,
      banId: subject.banId,
      counters: specs.map((w) => `${base}:${w.key}`),
      strikes: specs.map((w) => `${base}:strikes:${subject.banId}:${w.key}`),
      ban: `${base}:ban:${subject.banId}`,
    };
    if (this.keys.size >= KEPT_SUBJECTS) this.keys.clear();
    this.keys.set(subject.id, keys);
    return keys;
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
    // Windows are named by their number since the epoch (a small integer: cheap to print).
    const index = Math.floor(nowMs / lengthMs);
    return { name, limit, seconds, key: `${name}:${index}`, endMs: (index + 1) * lengthMs };
  }
}
