import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Limits } from '../domain/plans.js';
import { ApiError, RETRY_SOON } from '../errors.js';
import type { Decision, RateLimiter, Stale, Subject } from '../limits/rate-limiter.js';
import type { Log } from '../log.js';
import type { MaybePromise } from '../maybe.js';
import type { Metrics } from '../ops/metrics.js';
import type { Outages } from '../ops/outages.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The rate-limit decision of this request, once counted. */
    rateLimit: Decision | null;
  }
}

/**
 * X-RateLimit-* (the window with the fewest requests left) and the IETF RateLimit-Policy /
 * RateLimit fields (draft-ietf-httpapi-ratelimit-headers) for both windows. During a ban they
 * describe the ban, as Retry-After does: nothing remains until it ends, whatever the window.
 */
export function setRateLimitHeaders(reply: FastifyReply, decision: Decision): void {
  const { tightest } = decision;
  const nowSeconds = decision.nowMs / 1000;
  const banned = decision.refusal === 'key_banned';
  const resetAt = banned ? Math.ceil(nowSeconds) + (decision.retryAfter ?? 1) : tightest.resetAt;
  const remaining = banned ? '0' : digits(tightest.remaining);
  const secondsLeft = digits(Math.max(0, Math.ceil(resetAt - nowSeconds)));
  reply
    .header('x-ratelimit-limit', digits(tightest.limit))
    .header('x-ratelimit-remaining', remaining)
    .header('x-ratelimit-reset', digits(resetAt))
    .header('ratelimit-policy', decision.policy)
    .header('ratelimit', `"${tightest.name}";r=${remaining};t=${secondsLeft}`);
}

/**
 * A whole number's decimal digits, without V8's number-to-string cache: String(n) keeps each
 * result in that long-lived cache, so a count that changes on every request left one string per
 * request to outlive the young generation, old-space garbage at every request
 * (docs/decisions/0024-rate-limiting.md).
 */
function digits(n: number): string {
  return n.toFixed(0);
}

function refusal(decision: Decision, ip: boolean): ApiError {
  const retryAfter = decision.retryAfter ?? 1;
  const { limit, name } = decision.tightest;
  const banned = decision.refusal === 'key_banned';
  const message = banned
    ? `${ip ? 'This client address' : 'This API key'} is temporarily banned for sending requests while rate limited; retry in ${retryAfter} s.`
    : `Rate limit of ${limit} requests per ${name} exceeded; retry in ${retryAfter} s. ` +
      'Back off exponentially: requests sent while limited can get the key banned.';
  return new ApiError(banned ? 'key_banned' : 'rate_limited', message, undefined, {
    'retry-after': String(retryAfter),
  });
}

/** Counts the request against the subject's plan, sets the headers, and refuses when over. */
export class RateLimitGuard {
  constructor(
    private readonly limiter: RateLimiter,
    private readonly onStoreError: 'closed' | 'open',
    private readonly outages: Outages,
    private readonly metrics?: Metrics,
    private readonly log?: Log,
  ) {}

  /**
   * Counts the request; at once with the memory store, so the embedded mode's hot path takes no
   * promise here. Throws (or rejects with) the refusal when the caller is over a limit. With
   * `expectKeys`, answers Stale (counting nothing) when the account's keys version is another.
   */
  charge(
    request: FastifyRequest,
    reply: FastifyReply,
    subject: Subject,
    limits: Limits,
    expectKeys?: string,
  ): MaybePromise<Stale | undefined> {
    let decision: MaybePromise<Decision | Stale>;
    try {
      decision = this.limiter.check(subject, limits, expectKeys);
    } catch (err) {
      return this.unavailable(err);
    }
    return decision instanceof Promise
      ? decision.then(
          (d) => this.apply(request, reply, subject, d),
          (err) => this.unavailable(err),
        )
      : this.apply(request, reply, subject, decision);
  }

  private apply(
    request: FastifyRequest,
    reply: FastifyReply,
    subject: Subject,
    decision: Decision | Stale,
  ): Stale | undefined {
    this.outages.answered('redis');
    if ('stale' in decision) return decision;
    request.rateLimit = decision;
    setRateLimitHeaders(reply, decision);
    if (!decision.allowed) {
      this.metrics?.rejected(decision.refusal ?? 'rate_limited');
      if (decision.banStarted) this.logBan(subject, decision.banStarted.untilMs, decision.nowMs);
      // A pool's bans fall on the address (a publishable key's: src/http/auth.ts).
      throw refusal(decision, subject.id.startsWith('ip:') || subject.pool !== undefined);
    }
    return undefined;
  }

  /**
   * A ban begins: logged by the instance whose request began it, and its end when it comes
   * (a timer that does not hold the process up). Keys by id, never by secret.
   */
  private logBan(subject: Subject, untilMs: number, nowMs: number): void {
    const { log } = this;
    if (log === undefined) return;
    const until = new Date(untilMs).toISOString();
    const fields = { subject: subject.id, bannedId: subject.banId, until };
    log.warn(fields, `${subject.banId} is banned until ${until} for sending while rate limited`);
    setTimeout(() => log.warn(fields, `ban of ${subject.banId} ended`), untilMs - nowMs).unref();
  }

  /** The store did not answer: let the request through (open) or refuse it with 503 (closed). */
  private unavailable(err: unknown): Stale | undefined {
    // Logged once per outage, not once per request.
    this.outages.failed('redis', err);
    // Let through uncounted; and no kept verification is confirmed (see the bearer guard).
    if (this.onStoreError === 'open') return { stale: true, versions: undefined };
    throw new ApiError(
      'service_unavailable',
      'Rate limiting is unavailable for a moment; retry shortly.',
      undefined,
      RETRY_SOON,
    );
  }
}
