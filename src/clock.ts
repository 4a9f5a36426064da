/** Time, injectable so tests (and the sunset switch, the rate-limit windows) can move it. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A reader of the clock's time in ms since the epoch: for the system clock, `Date.now`, which
 * makes no Date (what every request reads should not make one). */
export function millisOf(clock: Clock): () => number {
  return clock === systemClock ? Date.now : () => clock.now().getTime();
}

/** How often, at most, `wallTimeOf` reads the two clocks again (ms of instants). */
const OFFSET_EVERY_MS = 50;
/** A reading of the wall clock in whole ms is up to 1 ms behind: a move back of no more than
 * this is that, not the clock. */
const JITTER_MS = 2;

/**
 * A reader of the clock's time (whole ms since the epoch) at an instant read earlier with
 * `performance.now()`: an instant stamped on each request then costs one clock read, not two.
 * For the system clock it adds an offset between the two clocks, read again once
 * OFFSET_EVERY_MS of instants have passed, and reads the time up to 1 ms behind `Date.now()`
 * (a reading of the offset is as much behind, the wall clock counting whole ms). It follows
 * the wall clock forward at once and back only past JITTER_MS: of two instants, the later
 * never reads as an earlier time for a reading's rounding, and a wall clock set back, or
 * slewed back, is followed once it is more than 2 ms behind. Any other clock (a test's, which
 * moves only when told) is read as it is, at the call: the instant is not used.
 */
export function wallTimeOf(clock: Clock): (instant: number) => number {
  if (clock !== systemClock) return () => clock.now().getTime();
  let readAt = performance.now();
  let offset = Date.now() - readAt;
  return (instant) => {
    if (instant - readAt > OFFSET_EVERY_MS) {
      readAt = performance.now();
      const next = Date.now() - readAt;
      if (next > offset || offset - next > JITTER_MS) offset = next;
    }
    return Math.floor(offset + instant);
  };
}

/** The work's result, or a rejection once `ms` have passed without one. */
export async function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** "42 seconds", "15 minutes", "9 hours": a span as a person reads it. */
export function waitText(seconds: number): string {
  if (seconds < 120) return `${seconds} second${seconds === 1 ? '' : 's'}`;
  if (seconds < 2 * 3600) return `${Math.ceil(seconds / 60)} minutes`;
  return `${Math.ceil(seconds / 3600)} hours`;
}

/** `ms` give or take 20%, at random: retries of a burst do not land together. */
export function jittered(ms: number): number {
  return Math.round(ms * (0.8 + Math.random() * 0.4));
}

/** Seconds from `since` to the clock's now; 0 for none (or a time still to come). */
export function secondsSince(clock: Clock, since: Date | null): number {
  return since ? Math.max(0, (clock.now().getTime() - since.getTime()) / 1000) : 0;
}

/** A worker loop's wait between polls, which `wake()` ends early (new work, a slot freed, the
 * worker closing). One wait at a time. */
export class Wakeable {
  private ended: (() => void) | undefined;

  /** Resolves after `ms`, or once woken. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.wake(), ms);
      this.ended = () => {
        clearTimeout(timer);
        this.ended = undefined;
        resolve();
      };
    });
  }

  /** Ends the wait, if one is under way. */
  wake(): void {
    this.ended?.();
  }
}
