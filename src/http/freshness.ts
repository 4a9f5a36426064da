import type { FastifyReply, FastifyRequest } from 'fastify';
import { BoundedCache, type CacheStats } from '../bounded-cache.js';
import { UNANNOUNCED } from '../domain/api-keys.js';
import type { RateLimiter } from '../limits/rate-limiter.js';
import type { MaybePromise } from '../maybe.js';
import type { Outages } from '../ops/outages.js';
import { type AnsweredPage, type DataVersions, versionFor } from './page-cache.js';

/**
 * What a write did to the account's catalogue, as its route declares it (`config.writes`):
 * - `appends`: it only adds rows, each with an id above every id its table holds, so every
 *   full page (one with a next page) stays as it was. True where ids are given in commit order:
 *   the embedded store, whose one writer commits in turn;
 * - `changes` (when not said): anything else.
 */
export type CatalogueWrite = 'appends' | 'changes';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** What this route's writes do to the account's catalogue (default `changes`). */
    writes?: CatalogueWrite;
  }
}

/**
 * Says under which versions of an account's data a read is made, so a cached answer is reused
 * only while the version it depends on stands: never staler than a read would be. Versions
 * are per account: a write to one account's catalogue leaves every other account's cached
 * pages standing.
 */
export interface Freshness {
  /** The versions the caller's data would be read under now; undefined when nothing may be
   * cached. Taken before the read: a write during it makes what is kept stale, never the
   * reverse. */
  dataVersions(request: FastifyRequest, accountId: string): DataVersions | undefined;
  /** Whether `page`, read under `versions`, may be kept for later requests. */
  keeps(
    request: FastifyRequest,
    accountId: string,
    versions: DataVersions,
    page: AnsweredPage,
  ): boolean;
  /** The account's catalogue changed (committed, not yet answered): what was kept of it that
   * the write could have changed is read again from the next request on, here and on every
   * instance. */
  wrote(request: FastifyRequest, accountId: string, write: CatalogueWrite): MaybePromise<void>;
  /** What it keeps, for /metrics. */
  readonly caches: readonly CacheStats[];
}

/** Accounts whose versions are kept at most; past it every account moves on at once. */
const KEPT_ACCOUNTS = 100_000;

/**
 * The embedded store (SQLite, one process writing its catalogue): versions per account, moved
 * on by this process's writes to that account (`wrote`, before the write is answered; an
 * append moves only `whole`), and for every account at once when another process commits
 * anything (the CLI, seen within 10 ms: `changesElsewhere`), since what it touched is not
 * known. Versions come from one counter that only goes forward, so none is ever given twice.
 */
export function localFreshness(changesElsewhere: () => number): Freshness {
  let counter = 0;
  /** The version every account has at least: moved on by another process's commit, and when
   * an account's versions are let go (they must not fall back to an older value). */
  let floor: DataVersions = { whole: 0, fullPages: 0 };
  const versions = new BoundedCache<string, DataVersions>('account versions', {
    maxEntries: KEPT_ACCOUNTS,
    onEvict: () => {
      floor = everyAccountMovesOn();
    },
  });
  const everyAccountMovesOn = (): DataVersions => {
    const next = ++counter;
    return { whole: next, fullPages: next };
  };
  let elsewhereSeen = changesElsewhere();
  const versionsOf = (accountId: string): DataVersions => {
    const elsewhere = changesElsewhere();
    if (elsewhere !== elsewhereSeen) {
      elsewhereSeen = elsewhere;
      floor = everyAccountMovesOn();
    }
    const own = versions.get(accountId);
    // Behind the floor: this account's last write came before another process's commit.
    return own === undefined || (own.fullPages as number) < (floor.fullPages as number)
      ? floor
      : own;
  };
  return {
    caches: [versions],
    dataVersions: (_request, accountId) => versionsOf(accountId),
    keeps: (_request, accountId, read, page) =>
      versionFor(page, versionsOf(accountId)) === versionFor(page, read),
    wrote: (_request, accountId, write) => {
      const now = versionsOf(accountId);
      const next = ++counter;
      versions.set(
        accountId,
        write === 'appends'
          ? { whole: next, fullPages: now.fullPages }
          : { whole: next, fullPages: next },
      );
    },
  };
}

/** PostgreSQL without Redis: other instances write unseen, so nothing read is kept. */
export const nothingKept: Freshness = {
  caches: [],
  dataVersions: () => undefined,
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
    caches: [],
    dataVersions: (request) => {
      // One version in Redis, moved on by appends too: ids there are not given in commit
      // order (concurrent transactions on PostgreSQL), so an append may land inside a page.
      const data = request.rateLimit?.versions?.data;
      return data === undefined ? undefined : { whole: data, fullPages: data };
    },
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
      await freshness.wrote(
        request,
        caller.account.id,
        request.routeOptions.config.writes ?? 'changes',
      );
    }
    return payload;
  };
}
