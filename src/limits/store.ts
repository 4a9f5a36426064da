import type { MaybePromise } from '../maybe.js';

/**
 * Where rate-limit counters live. One call checks and counts every window of a subject in a
 * single atomic step, so concurrent requests can never be accepted past a limit, and a
 * rejected request counts in no window.
 */
export interface Counter {
  key: string;
  limit: number;
  /** How long the counter lives: at least until its window ends, by any instance's clock. */
  ttlMs: number;
}

/** A subject's counters in the current windows: the same for all its requests in them. */
export interface HitInput {
  counters: Counter[];
  /** One per counter: requests refused while that window was full. */
  strikeKeys: string[];
  /** One per counter: when that window first refused a request (ms). */
  sinceKeys: string[];
  banKey: string;
  /** More strikes than this in one window starts a ban. */
  banThreshold: number;
  /**
   * Refusals in the first `banGraceMs` after a window's first refusal are no strikes: they
   * were on their way before their client could see a 429 (a client with many requests in
   * flight, or several processes on one key). Only a client that goes on past that is banned.
   */
  banGraceMs: number;
  banMs: number;
  /**
   * The subject's version keys (its keys, its data, its appends), read in the same step and returned
   * with the counts: the shared store's answer to "has anything I keep of this account
   * changed?", at no extra round trip. Accounts only; a store that shares nothing ignores them.
   */
  versionKeys?: readonly [keys: string, data: string, appends: string];
}

/** What a shared store's version keys held when a request was counted. */
export interface Versions {
  /** Moved on by a change to the account's keys or plan. */
  keys: string;
  /** Moved on by a change to its catalogue other than an append. */
  data: string;
  /** Moved on by an append to its catalogue (src/http/freshness.ts, CatalogueWrite). */
  appends: string;
}

/** A request counted (or refused), with the versions a shared store read beside it. */
export type Counted = (
  | { outcome: 'allowed'; counts: number[] }
  | { outcome: 'limited'; counts: number[]; index: number }
  /** `started`: this very request began the ban (it is logged once, by whoever saw that). */
  | { outcome: 'banned'; counts: number[]; banMsLeft: number; started?: boolean }
) & { versions?: Versions };

export type HitResult =
  | Counted
  // The keys version was not the one expected: nothing was counted.
  | { outcome: 'stale'; versions: Versions };

export interface CounterStore {
  readonly kind: 'memory' | 'redis';
  /**
   * Checks and counts one request at `nowMs`: at once in memory; a round trip on Redis. With
   * `expectKeys`, a store that keeps versions counts only if the keys version is that one.
   */
  hit(input: HitInput, nowMs: number, expectKeys?: string): MaybePromise<HitResult>;
  /** Moves a version key on (a shared store; a no-op where nothing is shared). */
  bump(versionKey: string): Promise<void>;
  /** The current values of counters (0 for one never counted or expired), counting nothing. */
  read(keys: string[], nowMs: number): Promise<number[]>;
  /** When each ban ends (ms), or undefined where there is none now, counting nothing. */
  banEnds(banKeys: string[], nowMs: number): Promise<Array<number | undefined>>;
  /** Resolves when the store answers (readiness); rejects at once when it cannot. */
  ping(): Promise<void>;
  /** Safe to call more than once. */
  close(): Promise<void>;
}
