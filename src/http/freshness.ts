import type { FastifyReply, FastifyRequest } from 'fastify';
import { UNANNOUNCED } from '../domain/api-keys.js';
import type { RateLimiter } from '../limits/rate-limiter.js';
import type { MaybePromise } from '../maybe.js';
import type { Outages } from '../ops/outages.js';
import type { Version } from './page-cache.js';

/**
 * Says under which version of an account's data a read is made, so a cached answer is reused
 * only while that version stands: never staler than a read would be. Versions are per account:
 * a write to one account's catalogue leaves every other account's cached pages standing.
 */
export interface Freshness {
  /** The version the caller's data would be read under now; undefined when nothing may be
   * cached. Taken before the read: a write during it makes what is kept stale, never the
   * reverse. */
  dataVersion(request: FastifyRequest, accountId: string): Version | undefined;
  /** Whether what was read under `version` may be kept for later requests. */
  keeps(request: FastifyRequest, accountId: string, version: Version): boolean;
  /** The account's catalogue changed (committed, not yet answered): what was kept of it is
   * read again from the next request on, here and on every instance. */
  wrote(request: FastifyRequest, accountId: string): MaybePromise<void>;
}

/** Accounts whose version is kept at most; past it every account moves on at once. */
const KEPT_ACCOUNTS = 100_000;

/**
 * The embedded store (SQLite, one process writing its catalogue): a version per account, moved
 * on by this process's writes to that account (`wrote`, before the write is answered), and for
 * every account at once when another process commits anything (the CLI, seen within 10 ms:
 * `changesElsewhere`), since which account it touched is not known. Versions come from one
 * counter that only goes forward, so no version is ever given twice.
 */
export function localFreshness(changesElsewhere: () => number): Freshness {
  const versions = new Map<string, number>();
  let counter = 0;
  /** The version every account has at least: moved on by another process's commit. */
  let floor = 0;
  let elsewhereSeen = changesElsewhere();
  const versionOf = (accountId: string): number => {
    const elsewhere = changesElsewhere();
    if (elsewhere !== elsewhereSeen) {
      elsewhereSeen = elsewhere;
      floor = ++counter;
    }
    const own = versions.get(accountId);
    return own === undefined || own < floor ? floor : own;
  };
  return {
    dataVersion: (_request, accountId) => versionOf(accountId),
    keeps: (_request, accountId, version) => versionOf(accountId) === version,
    wrote: (_request, accountId) => {
      if (versions.size >= KEPT_ACCOUNTS) {
        versions.clear();
        floor = counter + 1;
      }
      versions.set(accountId, ++counter);
    },
  };
}

/** PostgreSQL without Redis: other instances write unseen, so nothing read is kept. */
export const nothingKept: Freshness = {
  dataVersion: () => undefined,
  keeps: () => false,
  wrote: () => {},
};

/**
 * The shared mode (PostgreSQL with Redis): the caller's account's data version, read from
 * Redis in the script that counted the request, before anything was read for it. Every write
 * to the account's catalogue moves it on in Redis before it is answered, so a page read under
 * one version is the account's data as of that version, on any instance.
 */
export function sharedFreshness(limiter: RateLimiter, outages: Outages): Freshness {
  return {
    dataVersion: (request) => request.rateLimit?.versions?.data,
    keeps: () => true,
    wrote: (request, accountId) =>
      limiter.changed(accountId, 'data').then(
        () => outages.answered('redis'),
        (err: unknown) => {
          // Once per outage: a kept page of this account may be served up to 30 s stale.
          if (!outages.isDown('redis')) {
            request.log.warn(`could not announce a data change; ${UNANNOUNCED}`);
          }
          outages.failed('redis', err);
        },
      ),
  };
}

/**
 * The catalogue's onSend hook: a write tells Freshness before it is answered, so whoever reads
 * next, here or on any instance, reads past it. Refused writes too: one that committed and
 * then failed must not leave a stale page, and a refusal costs only the caller's own pages.
 */
export function announceWrites(freshness: Freshness) {
  return async (request: FastifyRequest, _reply: FastifyReply, payload: unknown) => {
    const { caller, method } = request;
    if (caller && method !== 'GET' && method !== 'HEAD') {
      await freshness.wrote(request, caller.account.id);
    }
    return payload;
  };
}
