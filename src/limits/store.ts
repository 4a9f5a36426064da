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
  banKey: string;
  /** More strikes than this in one window starts a ban. */
  banThreshold: number;
  banMs: number;
}

export type HitResult =
  | { outcome: 'allowed'; counts: number[] }
  | { outcome: 'limited'; counts: number[]; index: number }
  | { outcome: 'banned'; counts: number[]; banMsLeft: number };

export interface CounterStore {
  readonly kind: 'memory' | 'redis';
  /** Checks and counts one request at `nowMs`: at once in memory; a round trip on Redis. */
  hit(input: HitInput, nowMs: number): MaybePromise<HitResult>;
  /** The current values of counters (0 for one never counted or expired), counting nothing. */
  read(keys: string[], nowMs: number): Promise<number[]>;
  /** Resolves when the store answers (readiness); rejects at once when it cannot. */
  ping(): Promise<void>;
  /** Safe to call more than once. */
  close(): Promise<void>;
}
