/** Time, injectable so tests (and the sunset switch, the rate-limit windows) can move it. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A reader of the clock's time in ms since the epoch: for the system clock, `Date.now`, which
 * makes no Date (a hook that runs for every request reads it). */
export function millisOf(clock: Clock): () => number {
  return clock === systemClock ? Date.now : () => clock.now().getTime();
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
