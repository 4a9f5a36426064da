import type { FastifyReply, FastifyRequest } from 'fastify';
import { UNANNOUNCED } from '../domain/api-keys.js';
import type { RateLimiter } from '../limits/rate-limiter.js';
import type { Outages } from '../ops/outages.js';
import type { Version } from './page-cache.js';

/**
 * Says under which version of a caller's data a read is made, so a cached answer is reused
 * only while that version stands: never staler than a read would be.
 */
export interface Freshness {
  /** The version the caller's data would be read under now; undefined when nothing may be
   * cached. Taken before the read: a write during it makes what is kept stale, never the
   * reverse. */
  dataVersion(request: FastifyRequest): Version | undefined;
  /** Whether what was read under `version` may be kept for later requests. */
  keeps(request: FastifyRequest, version: Version): boolean;
}

/**
 * The embedded store's own generation (`Database.generation`): one number for all the data,
 * moved by any write in this process at once and by another process's commit within 10 ms. A
 * page is kept only if no write landed while it was read.
 */
export function localFreshness(generation: () => number | undefined): Freshness {
  return {
    dataVersion: () => generation(),
    keeps: (_request, version) => generation() === version,
  };
}

/**
 * The shared mode (PostgreSQL with Redis): the caller's account's data version, read from
 * Redis in the script that counted the request, before anything was read for it. Every write
 * to the account's catalogue moves it on before it is answered (see `RateLimiter.changed`), so
 * a page read under one version is the account's data as of that version.
 */
export const sharedFreshness: Freshness = {
  dataVersion: (request) => request.rateLimit?.versions?.data,
  keeps: () => true,
};

/**
 * The shared mode's onSend hook for the catalogue: a successful write moves the caller's
 * account's data version on before it is answered, so whoever reads next, on any instance,
 * reads past it.
 */
export function announceWrites(limiter: RateLimiter, outages: Outages) {
  return async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const { caller, method } = request;
    if (caller && method !== 'GET' && method !== 'HEAD' && reply.statusCode < 400) {
      await limiter.changed(caller.account.id, 'data').then(
        () => outages.answered('redis'),
        (err: unknown) => {
          // Once per outage: a kept page of this account may be served up to 30 s stale.
          if (!outages.isDown('redis')) {
            request.log.warn(`could not announce a data change; ${UNANNOUNCED}`);
          }
          outages.failed('redis', err);
        },
      );
    }
    return payload;
  };
}
