import { createHmac } from 'node:crypto';
import { type Clock, waitText } from '../clock.js';
import { normalizeEmail } from '../domain/accounts.js';
import type { Limits } from '../domain/plans.js';
import type { Result } from '../domain/result.js';
import { ApiError, type ErrorCode, RETRY_SOON } from '../errors.js';
import type { RateLimiter, WindowState } from '../limits/rate-limiter.js';
import type { Outages } from '../ops/outages.js';
import { addressBlock } from './client-address.js';

// Windows and their reasons: docs/decisions/0002-sign-in-throttle.md.
/** Wrong passwords from one address block, whatever the email: one client trying many accounts. */
export const ADDRESS_FAILURE_LIMITS: Limits = { perMinute: 10, perDay: 300 };
/** Wrong passwords for one email from one address block: the guesser at a keyboard. */
export const EMAIL_ADDRESS_FAILURE_LIMITS: Limits = { perMinute: 5, perDay: 30 };
/** Wrong passwords for one email from anywhere: a guesser spread over many addresses. */
export const EMAIL_FAILURE_LIMITS: Limits = { perMinute: 10, perDay: 100 };
/** Portal forms (sign-up, sign-in, password) posted from one address block, right or wrong. */
export const FORM_POST_LIMITS: Limits = { perMinute: 20, perDay: 300 };

/** An attempt refused before any password was checked, with the answer to give. */
export interface Refused {
  ok: false;
  refused: ApiError;
}

function tooMany(retryAfter: number): ApiError {
  return new ApiError(
    'rate_limited',
    `Too many attempts. Wait ${waitText(retryAfter)}, then try again.`,
    undefined,
    { 'retry-after': String(retryAfter) },
  );
}

/** A counter of wrong passwords: its id in the rate limiter's store and its windows. */
interface Counter {
  id: string;
  limits: Limits;
}

/** This process's attempts on one counter that are between their check and their count. */
interface Pending {
  /** Admitted and not yet settled: each may yet be a wrong password. */
  inFlight: number;
  /** Wrong passwords counted so far; a check compares it before and after its read. */
  counted: number;
  /** Checks reading the store now: the entry stays while any does. */
  reading: number;
}

/**
 * The one rule for password attempts, the API's HTTP Basic and the portal's forms alike: wrong
 * passwords counted under the three counters below, all read before any password is hashed
 * (OWASP ASVS 2.2.1; docs/decisions/0002-sign-in-throttle.md).
 */
export class SignInThrottle {
  /** Attempts between their check and their count, by counter id (one throttle per app: the
   * API's and the portal's hold places alike). */
  private readonly pending = new Map<string, Pending>();
  private readonly emailKey: Buffer;

  constructor(
    private readonly limiter: RateLimiter,
    private readonly clock: Clock,
    private readonly onStoreError: 'closed' | 'open',
    private readonly outages: Outages,
    /** The server's keys (WEBHOOK_SECRET_KEY's, or derived from SESSION_SECRET), newest first:
     * the first keys the emails. A new one starts the counts again, as a new window would. */
    serverKeys: readonly string[],
  ) {
    const [serverKey] = serverKeys;
    if (serverKey === undefined) throw new Error('SignInThrottle needs a server key');
    this.emailKey = createHmac('sha256', serverKey).update('animal-store sign-in email').digest();
  }

  /** A portal form (sign-up, sign-in, password) from `ip`, right or wrong: a refusal if over. */
  async formPosted(ip: string): Promise<ApiError | undefined> {
    const id = `sign-in:form:${addressBlock(ip)}`;
    try {
      const decision = await this.limiter.check({ id, banId: id }, FORM_POST_LIMITS);
      return decision.allowed ? undefined : tooMany(decision.retryAfter ?? 1);
    } catch (err) {
      return this.storeAway(err);
    }
  }

  /**
   * Runs `check` (the password's) unless a counter of `email` or of `ip`'s block is used up,
   * and counts its failure against all three. Refused: `check` never ran.
   */
  async verify<T, C extends ErrorCode>(
    ip: string,
    email: string,
    check: () => Promise<Result<T, C>>,
  ): Promise<Result<T, C> | Refused> {
    const counters = this.counters(ip, email);
    const refused = await this.admit(counters);
    if (refused) return { ok: false, refused };
    let failed = false;
    try {
      const result = await check();
      failed = !result.ok;
      return result;
    } finally {
      if (failed) await this.count(counters);
      this.settle(counters, failed);
    }
  }

  /** The three counters of a password attempt, by id in the limiter's store. */
  counters(ip: string, email: string): Counter[] {
    const block = addressBlock(ip);
    const mac = createHmac('sha256', this.emailKey)
      .update(normalizeEmail(email))
      .digest('base64url')
      .slice(0, 22); // 128 bits
    return [
      { id: `sign-in:ip:${block}`, limits: ADDRESS_FAILURE_LIMITS },
      { id: `sign-in:email:${mac}:ip:${block}`, limits: EMAIL_ADDRESS_FAILURE_LIMITS },
      { id: `sign-in:email:${mac}`, limits: EMAIL_FAILURE_LIMITS },
    ];
  }

  /**
   * Reads the counters (counting nothing) and, when none is used up by the failures counted
   * and those that may yet be, holds a place in each; otherwise the refusal.
   */
  private async admit(counters: Counter[]): Promise<ApiError | undefined> {
    const entries = counters.map((counter) => this.hold(counter.id));
    const before = entries.map((entry) => entry.counted);
    let usage: WindowState[][] | undefined;
    try {
      usage = await Promise.all(
        counters.map((counter) => this.limiter.usage(counter.id, counter.limits)),
      );
    } catch (err) {
      const away = this.storeAway(err);
      if (away) {
        for (const [i, counter] of counters.entries()) this.release(counter.id, entries[i]);
        return away;
      }
      // Let through (RATE_LIMIT_ON_STORE_ERROR=open), still no faster than this process counts.
    }
    const nowSeconds = this.clock.now().getTime() / 1000;
    let retryAfter = 0;
    for (const [i, counter] of counters.entries()) {
      const entry = entries[i] as Pending;
      // Failures this process counted while the store was read may be missing from the read.
      const maybe = entry.inFlight + entry.counted - (before[i] ?? 0);
      const windows = usage?.[i] ?? [
        { limit: counter.limits.perMinute, used: 0, resetAt: nowSeconds },
        { limit: counter.limits.perDay, used: 0, resetAt: nowSeconds },
      ];
      for (const w of windows) {
        if (w.used >= w.limit) {
          retryAfter = Math.max(retryAfter, Math.ceil(w.resetAt - nowSeconds));
        } else if (w.used + maybe >= w.limit) {
          retryAfter = Math.max(retryAfter, 1); // settled in a moment, one way or the other
        }
      }
    }
    if (retryAfter > 0) {
      for (const [i, counter] of counters.entries()) this.release(counter.id, entries[i]);
      return tooMany(Math.max(1, retryAfter));
    }
    for (const [i, counter] of counters.entries()) {
      const entry = entries[i] as Pending;
      entry.inFlight++;
      this.release(counter.id, entry);
    }
    return undefined;
  }

  /** Counts a wrong password against each counter; a store away loses the count, not the answer. */
  private async count(counters: Counter[]): Promise<void> {
    try {
      await Promise.all(
        counters.map(({ id, limits }) => this.limiter.check({ id, banId: id }, limits)),
      );
    } catch (err) {
      this.outages.failed('redis', err);
    }
  }

  private settle(counters: Counter[], failed: boolean): void {
    for (const { id } of counters) {
      const entry = this.pending.get(id);
      if (entry === undefined) continue;
      entry.inFlight--;
      if (failed) entry.counted++;
      this.drop(id, entry);
    }
  }

  private hold(id: string): Pending {
    let entry = this.pending.get(id);
    if (entry === undefined) {
      entry = { inFlight: 0, counted: 0, reading: 0 };
      this.pending.set(id, entry);
    }
    entry.reading++;
    return entry;
  }

  private release(id: string, entry: Pending | undefined): void {
    if (entry === undefined) return;
    entry.reading--;
    this.drop(id, entry);
  }

  /** Nothing in flight and nobody reading: the store's count says it all. */
  private drop(id: string, entry: Pending): void {
    if (entry.inFlight === 0 && entry.reading === 0) this.pending.delete(id);
  }

  /** The store did not answer: go on uncounted (open), or refuse with 503 (closed). */
  private storeAway(err: unknown): ApiError | undefined {
    this.outages.failed('redis', err);
    if (this.onStoreError === 'open') return undefined;
    return new ApiError(
      'service_unavailable',
      'Signing in is unavailable for a moment; try again shortly.',
      undefined,
      RETRY_SOON,
    );
  }
}
