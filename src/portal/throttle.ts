import type { FastifyRequest } from 'fastify';
import type { Clock } from '../clock.js';
import { sha256 } from '../digest.js';
import type { Limits } from '../domain/plans.js';
import { ApiError, RETRY_SOON } from '../errors.js';
import type { RateLimiter } from '../limits/rate-limiter.js';
import type { Outages } from '../ops/outages.js';

/** Sign-in and sign-up posts from one client address, right or wrong. */
export const PORTAL_IP_LIMITS: Limits = { perMinute: 20, perDay: 300 };
/** Wrong passwords for one email from one address: the guesser at a keyboard. */
export const EMAIL_IP_FAILURE_LIMITS: Limits = { perMinute: 5, perDay: 30 };
/** Wrong passwords for one email from anywhere: a guesser spread over many addresses. */
export const EMAIL_FAILURE_LIMITS: Limits = { perMinute: 20, perDay: 200 };

/** "42 seconds", "15 minutes", "9 hours": a wait as a person reads it. */
export function waitText(seconds: number): string {
  if (seconds < 120) return `${seconds} second${seconds === 1 ? '' : 's'}`;
  if (seconds < 2 * 3600) return `${Math.ceil(seconds / 60)} minutes`;
  return `${Math.ceil(seconds / 3600)} hours`;
}

function tooMany(retryAfter: number): ApiError {
  return new ApiError(
    'rate_limited',
    `Too many attempts. Wait ${waitText(retryAfter)}, then try again.`,
    undefined,
    { 'retry-after': String(retryAfter) },
  );
}

/**
 * Limits on the portal's password forms, in the same counter store as the API's limits (so
 * they hold across instances). Posts are counted per client address before anything else;
 * wrong passwords are counted per email (hashed: addresses never appear in counter keys), and
 * an email over its limit is refused before scrypt runs. Right passwords count against no
 * email, so nobody locks themselves out by signing in, and nobody else can do it from one
 * address; only a guesser spread over many addresses can hold an email up, for a day at most.
 */
export class PortalThrottle {
  constructor(
    private readonly limiter: RateLimiter,
    private readonly clock: Clock,
    private readonly onStoreError: 'closed' | 'open',
    private readonly outages: Outages,
  ) {}

  /** The refusal to show, or undefined when the attempt may go ahead. */
  async admit(request: FastifyRequest, email?: string): Promise<ApiError | undefined> {
    return this.guarded(async () => {
      const id = `portal-ip:${request.ip}`;
      const decision = await this.limiter.check({ id, banId: id }, PORTAL_IP_LIMITS);
      if (!decision.allowed) return tooMany(decision.retryAfter ?? 1);
      if (email === undefined) return undefined;
      const nowSeconds = this.clock.now().getTime() / 1000;
      for (const [subject, limits] of this.emailSubjects(request, email)) {
        const windows = await this.limiter.usage(subject, limits);
        const full = windows.filter((w) => w.used >= w.limit);
        if (full.length > 0) {
          const resetAt = Math.max(...full.map((w) => w.resetAt));
          return tooMany(Math.max(1, Math.ceil(resetAt - nowSeconds)));
        }
      }
      return undefined;
    });
  }

  /** Counts a wrong password for the email. */
  async failed(request: FastifyRequest, email: string): Promise<void> {
    await this.guarded(async () => {
      for (const [id, limits] of this.emailSubjects(request, email)) {
        await this.limiter.check({ id, banId: id }, limits);
      }
      return undefined;
    });
  }

  private emailSubjects(request: FastifyRequest, email: string): Array<[string, Limits]> {
    const digest = sha256(email).slice(0, 32);
    return [
      [`portal-email:${digest}:ip:${request.ip}`, EMAIL_IP_FAILURE_LIMITS],
      [`portal-email:${digest}`, EMAIL_FAILURE_LIMITS],
    ];
  }

  private async guarded(work: () => Promise<ApiError | undefined>): Promise<ApiError | undefined> {
    try {
      return await work();
    } catch (err) {
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
}
