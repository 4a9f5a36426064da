/** Time, injectable so tests (and the sunset switch, the rate-limit windows) can move it. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };
