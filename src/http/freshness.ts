import type { FastifyBaseLogger, FastifyRequest, onSendHookHandler, RouteOptions } from 'fastify';
import { BoundedCache, type CacheStats } from '../bounded-cache.js';
import type { KeptUnder } from '../domain/api-keys.js';
import type { RateLimiter } from '../limits/rate-limiter.js';
import type { Versions } from '../limits/store.js';
import type { MaybePromise } from '../maybe.js';
import { brief, type Outages } from '../ops/outages.js';
import { type AnsweredPage, type DataVersions, versionFor } from './page-cache.js';

// Every rule about what may be answered from memory, and when it must be read again, lives
// here, for pages and keys in each mode; the caches only keep, and the rate limiter's one part
// is to count only while the keys version it is given stands
// (docs/decisions/0032-freshness-and-data-versions.md).

/**
 * In the shared mode, what is kept is also read again after this long, whatever the version
 * says: the bound on how long a change whose announcement Redis lost (see
 * RateLimiter.changed) can go unseen.
 */
export const SHARED_KEPT_MS = 30_000;

/** What a change whose announcement Redis lost can cost, for the messages that say so. */
export const UNANNOUNCED = `other instances may use what they kept for up to ${SHARED_KEPT_MS / 1000} s`;

/** What to do with a key verification once the request was counted (the shared mode). */
export type KeyCheck =
  | { confirmed: true }
  /** Read the key again, and keep it under `version` (or, undefined, keep nothing). */
  | { confirmed: false; version: string | undefined };

const CONFIRMED: KeyCheck = { confirmed: true };

/** No keys version is ever this: a key read before any count is always read again. */
const UNVERIFIED = '-';
const expectedOf = (kept: KeptUnder) =>
  kept.version === undefined ? UNVERIFIED : String(kept.version);

/**
 * What a write did to the account's catalogue, as its route declares it (`config.writes`), its
 * writes then announced (`announcerFor`): `appends` only adds rows, each with an id above every
 * id of its account's table (src/store/numbered.ts), so every full page stands; `changes` is
 * anything else (docs/decisions/0032-freshness-and-data-versions.md).
 */
export type CatalogueWrite = 'appends' | 'changes';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** What this route's writes do to the account's catalogue: declared, they are announced. */
    writes?: CatalogueWrite;
  }
}

/**
 * Says under which versions of an account's data (its catalogue; its keys and plan) a read is
 * made, so a kept answer is reused only while the version it depends on stands: never staler
 * than a read would be. Versions are per account: a write to one account's catalogue leaves
 * every other account's kept pages standing.
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
  /** Whether the versions things are checked against come with the request's count (the
   * shared mode: read from Redis in the counting script), so the key must be confirmed
   * after counting (`keyConfirmed`). */
  readonly versionsCounted: boolean;
  /** Kept pages are read again after this long, whatever their version says. */
  readonly pagesKeptAtMostMs: number;

  /** Where a key read now is kept: under the version of the account's keys it is read under
   * (taken before the read; in the shared mode `version` comes with the request's count), or
   * undefined: not kept. */
  keyRead(version?: string): KeptUnder;
  /** Whether a verification kept under `kept` may be used now without reading the key. */
  keyStands(kept: KeptUnder): boolean;
  /** The shared mode: the keys version a request's count is conditional on, for a caller
   * verified under `kept` (the counting script compares it with the account's, atomically). */
  keyExpected(kept: KeptUnder): string;
  /** The shared mode, when the count did not stand: what to do with the verification used
   * (kept under `kept`), given the account's versions as the count found them (undefined:
   * Redis did not answer, and requests go through uncounted). */
  keyConfirmed(kept: KeptUnder, versions: Versions | undefined): KeyCheck;
  /** A key or a plan of the account changed in this process (committed): verifications kept
   * of it are read again from the next request on, here and on every instance. */
  keysChanged(accountId: string): Promise<void>;

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
 *
 * Key verifications are kept under one generation for all accounts: moved on by a key or plan
 * change in this process and by another process's commit.
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
  /** Key and plan changes made in this process. */
  let keyChangesHere = 0;
  const keysGeneration = () => changesElsewhere() + keyChangesHere;
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
    versionsCounted: false,
    pagesKeptAtMostMs: Number.POSITIVE_INFINITY,
    keyRead: () => ({ version: keysGeneration(), atMs: 0 }),
    keyStands: (kept) => kept.version === keysGeneration(),
    keyExpected: expectedOf,
    keyConfirmed: () => CONFIRMED,
    keysChanged: async () => {
      keyChangesHere++;
    },
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

const NOT_KEPT: KeptUnder = { version: undefined, atMs: 0 };

/** PostgreSQL without Redis: other instances write unseen, so nothing read is kept. */
export const nothingKept: Freshness = {
  caches: [],
  versionsCounted: false,
  pagesKeptAtMostMs: 0,
  keyRead: () => NOT_KEPT,
  keyStands: () => false,
  keyExpected: expectedOf,
  keyConfirmed: () => CONFIRMED,
  keysChanged: async () => {},
  dataVersions: () => undefined,
  keeps: () => false,
  wrote: () => {},
};

/**
 * The shared mode (PostgreSQL with Redis): the versions of the caller's account (its keys, its
 * catalogue), read from Redis in the script that counted the request, before anything was read
 * for it. Every change moves them on in Redis before it is answered, so what was read under a
 * version is the account's as of that version, on any instance. What is kept is also read
 * again after SHARED_KEPT_MS, the bound on an announcement Redis lost.
 */
export function sharedFreshness(
  limiter: RateLimiter,
  outages: Outages,
  log: FastifyBaseLogger,
  monotonicMs = () => performance.now(),
): Freshness {
  /** Tells every instance; on failure, says once per outage what it may cost. */
  const announce = (
    accountId: string,
    what: keyof Versions,
    say: (fields: object, text: string) => void,
  ) =>
    limiter.changed(accountId, what).then(
      () => outages.answered('redis'),
      (err: unknown) => {
        if (!outages.isDown('redis')) {
          say(
            { error: brief(err), accountId },
            `could not announce a ${what} change; ${UNANNOUNCED}`,
          );
        }
        outages.failed('redis', err);
      },
    );
  return {
    caches: [],
    versionsCounted: true,
    pagesKeptAtMostMs: SHARED_KEPT_MS,
    keyRead: (version) => ({ version, atMs: monotonicMs() }),
    keyStands: (kept) => kept.version !== undefined && monotonicMs() - kept.atMs < SHARED_KEPT_MS,
    keyExpected: expectedOf,
    keyConfirmed: (kept, versions) => {
      // Redis did not answer and requests go through uncounted (RATE_LIMIT_ON_STORE_ERROR=open):
      // nothing kept can be confirmed, so a kept key is read again, and nothing is kept.
      if (versions === undefined) {
        return kept.version === undefined ? CONFIRMED : { confirmed: false, version: undefined };
      }
      // Read under another version (or none: just read, before any count): read it again
      // under the version the count found, which was taken before that read.
      return expectedOf(kept) === versions.keys
        ? CONFIRMED
        : { confirmed: false, version: versions.keys };
    },
    keysChanged: (accountId) =>
      announce(accountId, 'keys', (fields, text) => log.error(fields, text)),
    dataVersions: (request) => {
      // Full pages depend on the data version; the last pages on the appends version too.
      const versions = request.rateLimit?.versions;
      return versions === undefined
        ? undefined
        : { whole: `${versions.data} ${versions.appends}`, fullPages: versions.data };
    },
    keeps: () => true,
    // Once per outage: a kept page of this account may be served up to 30 s stale.
    wrote: (request, accountId, write) =>
      announce(accountId, write === 'appends' ? 'appends' : 'data', (fields, text) =>
        request.log.warn(fields, text),
      ),
  };
}

/**
 * The announcement of a route's writes, where its `config.writes` declares them (the
 * catalogue's and the orders'): an onSend hook telling Freshness of the write before it is
 * answered, so whoever reads next, here or on any instance, reads past it. Refused writes too:
 * one that committed and then failed must not leave a stale page, and a refusal costs only the
 * caller's own pages. Made when the route is declared (src/http/route-pipeline.ts): a read runs
 * none. A route declaring writes for a read method is refused at start-up.
 */
export function announcerFor(
  freshness: Freshness,
  route: RouteOptions,
): onSendHookHandler | undefined {
  const write = route.config?.writes;
  if (write === undefined) return undefined;
  const methods = [route.method].flat();
  // Each of its requests a write, so the hook need not ask: a route taking reads too would
  // announce them.
  if (methods.some((method) => method === 'GET' || method === 'HEAD')) {
    throw new Error(`${route.url}: a route that declares writes takes only writes`);
  }
  return (request, _reply, payload, done) => {
    const { caller } = request;
    const announced = caller ? freshness.wrote(request, caller.account.id, write) : undefined;
    // Embedded, told at once; shared, once Redis has answered (or failed: it never throws).
    if (announced instanceof Promise) announced.then(() => done(null, payload), done);
    else done(null, payload);
  };
}
