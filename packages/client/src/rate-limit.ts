/**
 * The seed's client duties for rate limits, in one place: the last state the service reported,
 * and a gate every request passes before it is sent. The gate never lets a request out while
 * it knows the key has nothing left (it waits for the window to refill), so a client alone on
 * its key is never refused, and one refused by surprise (another process on the same account)
 * holds every request back for the `Retry-After` the service gave. While little is left it
 * keeps few requests in flight (LOW_REMAINING), so that several processes on one key, each
 * with its calls in flight when the first 429 comes, stay below what the service's ban counts.
 */

/** What the service said last about the key's limits (X-RateLimit-* and RateLimit headers). */
export interface RateLimitState {
  /** Requests allowed in the window with the fewest left (`X-RateLimit-Limit`). */
  readonly limit: number;
  /** Requests left in it when the answer was sent (`X-RateLimit-Remaining`). */
  readonly remaining: number;
  /** When that window refills, as the service's clock counts (`X-RateLimit-Reset`, Unix s). */
  readonly reset: number;
  /** The same instant on this machine's clock (from `RateLimit`'s `t=`, which skew cannot bend). */
  readonly resetsAt: Date;
  /** The window's name (`minute`, `day`), when the service names it. */
  readonly window: string | undefined;
  /** The plan's windows as the `RateLimit-Policy` field gives them. */
  readonly policy: string | undefined;
}

/** The rate-limit state an answer carries, read against this machine's clock. */
export function readRateLimit(headers: Headers, now: number): RateLimitState | undefined {
  const limit = integer(headers.get('x-ratelimit-limit'));
  const remaining = integer(headers.get('x-ratelimit-remaining'));
  if (limit === undefined || remaining === undefined) return undefined;
  // RateLimit: "minute";r=59;t=37 gives the seconds left, which no clock skew can bend;
  // X-RateLimit-Reset is a Unix time on the service's clock, used when the field is absent.
  const field = headers.get('ratelimit') ?? '';
  const secondsLeft = integer(/[;,\s]t=(\d+)/.exec(field)?.[1] ?? null);
  const resetUnix = integer(headers.get('x-ratelimit-reset'));
  if (resetUnix === undefined) return undefined;
  const resetsAt = secondsLeft !== undefined ? now + secondsLeft * 1000 : resetUnix * 1000;
  return {
    limit,
    remaining,
    reset: resetUnix,
    resetsAt: new Date(resetsAt),
    window: /^\s*"([^"]+)"/.exec(field)?.[1],
    policy: headers.get('ratelimit-policy') ?? undefined,
  };
}

function integer(value: string | null): number | undefined {
  if (value === null || !/^\s*\d+\s*$/.test(value)) return undefined;
  return Number(value);
}

export interface GateOptions {
  /** The longest the gate waits for a window to refill; past it a call fails at once. */
  maxWaitMs: number;
  now: () => number;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  random: () => number;
}

/** Why a request cannot go now, and for how long. */
export class LimitedFor {
  constructor(
    readonly ms: number,
    readonly reason: 'window' | 'retry_after',
  ) {}
}

/**
 * Requests out at once are at most the key's remaining requests less LOW_REMAINING, and
 * IN_FLIGHT_WHEN_LOW while fewer are left (or none is known). The service bans a key that sends more than 20 requests while
 * limited (after a second's grace); other processes on the key count against the same
 * remaining, unseen, so a client sends as if it were not alone: a few processes each holding
 * at most 8 in flight stay below what the ban counts.
 */
const LOW_REMAINING = 40;
const IN_FLIGHT_WHEN_LOW = 8;

export class RateLimitGate {
  /** The last state read from an answer. */
  last: RateLimitState | undefined;
  /** Requests we may still send in the window, counting down as they go out. */
  private allowance: number | undefined;
  private refillsAt = 0;
  /** Nothing goes out before this instant (a 429's or 503's Retry-After). */
  private holdUntil = 0;
  /** Requests let out and not yet answered. */
  private outstanding = 0;
  /** The last answer carried no rate-limit fields (a gateway's, say): nothing to learn by
   * sending one request at a time. */
  private unmetered = false;
  /** Waiters for the next answer, while the state is unknown and one request finds it out. */
  private waiters: Array<() => void> = [];

  constructor(private readonly options: GateOptions) {}

  /**
   * Resolves when the request may be sent (and counts it as sent), or throws `LimitedFor`
   * when that would take longer than `maxWaitMs`.
   */
  async enter(signal?: AbortSignal): Promise<void> {
    const { now } = this.options;
    for (;;) {
      signal?.throwIfAborted();
      const at = now();
      if (this.holdUntil > at) {
        await this.wait(this.holdUntil - at + this.jitter(250), 'retry_after', signal);
        continue;
      }
      if (this.allowance !== undefined && this.refillsAt <= at) this.allowance = undefined;
      if (this.allowance === undefined) {
        // Unknown (first request, or the window has refilled): one request goes and finds
        // out; the others wait for its answer rather than all going at once.
        if (this.outstanding === 0 || this.unmetered) break;
        await new Promise<void>((resolve) => this.waiters.push(resolve));
        continue;
      }
      // Few out at once while little is left (LOW_REMAINING): at most what is left above
      // LOW_REMAINING, and never fewer than IN_FLIGHT_WHEN_LOW.
      const room = Math.max(IN_FLIGHT_WHEN_LOW, (this.last?.remaining ?? 0) - LOW_REMAINING);
      if (this.outstanding >= room) {
        await new Promise<void>((resolve) => this.waiters.push(resolve));
        continue;
      }
      if (this.allowance > 0) {
        this.allowance--;
        break;
      }
      // Nothing left: wait for the window to refill, a little after so the service's
      // window has surely moved on, spread so that waiting requests do not all go at once.
      await this.wait(this.refillsAt - at + this.jitter(1000), 'window', signal);
    }
    this.outstanding++;
  }

  /** The request's answer (or its failure, without headers): frees its place. */
  leave(headers: Headers | undefined, status: number | undefined): void {
    this.outstanding--;
    if (headers) this.observe(headers, status);
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }

  private observe(headers: Headers, status: number | undefined): void {
    const at = this.options.now();
    const state = readRateLimit(headers, at);
    this.unmetered = state === undefined && status !== 429 && status !== 503;
    const last = this.last;
    // Answers come back in another order than the service counted them (a write waits for
    // its commit, a read does not): within one window the fewest remaining is the latest
    // count, and an answer of an earlier window says nothing of this one. Windows only move
    // forward (the tightest one changes from minute to day, never back, within a day).
    const fresher =
      state !== undefined &&
      (last === undefined ||
        state.reset > last.reset ||
        (state.reset === last.reset && state.remaining <= last.remaining));
    if (state && fresher) {
      const sameWindow = last !== undefined && state.reset === last.reset;
      this.last = sameWindow
        ? { ...state, resetsAt: new Date(Math.min(+state.resetsAt, +last.resetsAt)) }
        : state;
      // The requests still out may not be counted in it yet: assume none of them is, so the
      // allowance errs low (a short wait) and never high (a refusal).
      this.allowance = Math.max(0, state.remaining - this.outstanding);
      this.refillsAt = this.last.resetsAt.getTime();
    }
    if (status === 429 || status === 503) {
      const seconds = retryAfterSeconds(headers, at) ?? 1;
      this.holdUntil = Math.max(this.holdUntil, at + seconds * 1000);
      if (status === 429) this.allowance = 0;
    }
  }

  /**
   * Sleeps `ms`, or less when an answer comes first: it may tell that the window refills
   * sooner than the state the wait was computed from said (another window, another clock).
   */
  private async wait(ms: number, reason: LimitedFor['reason'], signal?: AbortSignal) {
    if (ms > this.options.maxWaitMs) throw new LimitedFor(ms, reason);
    const done = new AbortController();
    const stop = () => done.abort(signal?.reason);
    signal?.addEventListener('abort', stop, { once: true });
    try {
      await Promise.race([
        this.options.sleep(ms, done.signal),
        new Promise<void>((resolve) => this.waiters.push(resolve)),
      ]);
    } finally {
      signal?.removeEventListener('abort', stop);
      done.abort();
    }
    signal?.throwIfAborted();
  }

  /** Up to `spreadMs`, at random. */
  jitter(spreadMs: number): number {
    return Math.floor(this.options.random() * spreadMs);
  }
}

/** `Retry-After` in seconds: delta-seconds or an HTTP date (RFC 9110 §10.2.3). */
export function retryAfterSeconds(headers: Headers, now = Date.now()): number | undefined {
  const value = headers.get('retry-after');
  if (value === null) return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000));
}
