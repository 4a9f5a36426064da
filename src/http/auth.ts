import type {
  FastifyInstance,
  FastifyPluginAsync,
  FastifyReply,
  FastifyRequest,
  onRequestHookHandler,
} from 'fastify';
import type { Account } from '../domain/accounts.js';
import { authenticatePassword } from '../domain/accounts.js';
import type { KeyAuthenticator, Principal } from '../domain/api-keys.js';
import type { Passwords } from '../domain/passwords.js';
import { type Limits, limitsFor } from '../domain/plans.js';
import { type Failure, fail, type Result } from '../domain/result.js';
import type { Grant, Scope } from '../domain/scopes.js';
import { ApiError, RETRY_SOON } from '../errors.js';
import type { Versions } from '../limits/store.js';
import { andThen, type MaybePromise } from '../maybe.js';
import type { ReadDb } from '../store/database.js';
import { admitOrigin, fromListedOrigin, openToPage } from './browser-access.js';
import { addressBlock } from './client-address.js';
import type { Freshness } from './freshness.js';
import type { RateLimitGuard } from './rate-limit.js';
import { neededScope, scopeCheck } from './scopes.js';
import type { Refused, SignInThrottle } from './sign-in-throttle.js';

export interface Caller {
  account: Account;
  /** The API key used, or null when the caller signed in with email and password. */
  keyId: string | null;
  /** What the key may do; null: everything (a full-access key, or email and password). */
  scopes: Grant;
  /** A publishable key's origins, the only ones it is served to; null: a secret key or a
   * password (src/http/browser-access.ts). */
  origins: readonly string[] | null;
}

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller | null;
  }
}

type AuthFailure =
  | 'missing_credentials'
  | 'malformed_authorization'
  | 'invalid_api_key'
  | 'invalid_credentials';

const BEARER_CHALLENGE = 'Bearer realm="animal-store"';
const BASIC_CHALLENGE = 'Basic realm="animal-store", charset="UTF-8"';
// Without valid credentials, a client is limited per address block (an IPv6 client per /64)
// with the Free plan's numbers, so keys cannot be guessed at speed; passwords have counters of
// their own, consulted before the hash (SignInThrottle).
const ANONYMOUS_LIMITS = limitsFor('free');
/**
 * A publishable key is counted apart from its account, so that a published key cannot use up
 * the account's plan: with the plan's numbers for the key, and for each client address block
 * using it the Free plan's, at most a quarter of the key's minute and a tenth of its day, so
 * that one client cannot use up the key (docs/decisions/0089-publishable-keys-limits.md).
 */
function perAddressOf(key: Limits): Limits {
  const free = limitsFor('free');
  return {
    perMinute: Math.min(free.perMinute, Math.ceil(key.perMinute / 4)),
    perDay: Math.min(free.perDay, Math.ceil(key.perDay / 10)),
  };
}

/** Preflights, per client address block, in a pool of their own: a page's visitors behind one
 * address send one a URL, and they must not use up what sign-up and 404s are counted against. */
const PREFLIGHT_LIMITS = limitsFor('pro');

/** What a request without valid credentials is counted as: its client's address block. */
export function clientSubject(request: Pick<FastifyRequest, 'ip'>) {
  const id = `ip:${addressBlock(request.ip)}`;
  return { id, banId: id };
}

/** What authentication found: a caller, a failure to answer 401, or a refusal before any check. */
type Read<P> = Result<P, AuthFailure> | Refused;

const BEARER = /^Bearer +([^\s]+) *$/i;
const WHITESPACE = /\s/;

/** `Authorization: Bearer <API_KEY>`; the scheme name is case-insensitive (RFC 9110 §11.1). */
function readBearer(
  keys: KeyAuthenticator,
  header: string | undefined,
  /** Read the key from the store, kept under `version` (see KeyAuthenticator.reverify). */
  fresh?: { version: string | undefined },
): MaybePromise<Result<Principal, AuthFailure>> {
  const check = (secret: string) =>
    fresh ? keys.reverify(secret, fresh.version) : keys.authenticate(secret);
  if (header === undefined) {
    return fail(
      'missing_credentials',
      'No API key was sent. Send one as `Authorization: Bearer <API_KEY>` (get it in the ' +
        "portal's Keys page or with `POST /v1/keys`).",
    );
  }
  // The usual spelling is read without the regular expression, whose backtracking grows a
  // stack on every request; every other spelling goes by the rule.
  const usual = header.startsWith('Bearer ') ? header.slice(7) : '';
  if (usual !== '' && !WHITESPACE.test(usual)) return check(usual);
  const match = BEARER.exec(header);
  if (!match?.[1]) {
    return fail(
      'malformed_authorization',
      'The Authorization header is not `Bearer <API_KEY>`: send `Bearer`, a space, then the key.',
    );
  }
  return check(match[1]);
}

/**
 * `Authorization: Basic base64(email:password)` (RFC 7617), for managing keys. The password is
 * hashed only if the throttle lets the attempt through (its counters are the portal's too).
 */
async function readBasic(
  db: ReadDb,
  passwords: Passwords,
  throttle: SignInThrottle,
  request: FastifyRequest,
): Promise<Read<Caller>> {
  const header = request.headers.authorization;
  if (header === undefined) {
    return fail(
      'missing_credentials',
      'Sign in with HTTP Basic: `Authorization: Basic base64(email:password)`.',
    );
  }
  const match = /^Basic +([A-Za-z0-9+/]+={0,2}) *$/i.exec(header);
  const decoded = match?.[1] ? Buffer.from(match[1], 'base64').toString('utf8') : '';
  const colon = decoded.indexOf(':');
  if (colon <= 0) {
    return fail(
      'malformed_authorization',
      'The Authorization header is not HTTP Basic; send `Basic base64(email:password)`.',
    );
  }
  const email = decoded.slice(0, colon);
  const result = await throttle.verify(request.ip, email, () =>
    authenticatePassword(db, passwords, email, decoded.slice(colon + 1)),
  );
  return result.ok
    ? { ok: true, value: { account: result.value, keyId: null, scopes: null, origins: null } }
    : result;
}

/**
 * Where kept key verifications are confirmed by the count (the shared mode): the count stands
 * only if the account's keys version is the one `expect` names; when it is not, `again` reads
 * the caller anew (the rules are Freshness's: keyExpected, keyConfirmed).
 */
interface Confirm<P> {
  expect(caller: P): string;
  again(
    request: FastifyRequest,
    caller: P,
    versions: Versions | undefined,
  ): MaybePromise<Result<P, AuthFailure>> | undefined;
}

/**
 * An onRequest hook: authenticate, then count the request against the account (or, when the
 * credentials are not valid, against the client IP) before answering 401. Callback-style and
 * synchronous when the key and the counters are in memory (the embedded mode's usual case).
 */
function guard<P extends Caller>(
  limits: RateLimitGuard,
  challenge: string,
  read: (request: FastifyRequest) => MaybePromise<Read<P>>,
  confirm?: Confirm<P>,
  /** Once admitted and counted: may the caller do what the route does? Throws if not. */
  authorize?: (request: FastifyRequest) => void,
): onRequestHookHandler {
  const refuse = (
    request: FastifyRequest,
    reply: FastifyReply,
    failure: Failure<AuthFailure> | Refused,
  ): MaybePromise<void> => {
    const charged = limits.charge(request, reply, clientSubject(request), ANONYMOUS_LIMITS);
    return andThen(charged, () => {
      if ('refused' in failure) throw failure.refused;
      const error = failure.code === 'invalid_api_key' ? ', error="invalid_token"' : '';
      throw new ApiError(failure.code, failure.message, undefined, {
        'www-authenticate': `${challenge}${error}`,
      });
    });
  };
  const admit = (
    request: FastifyRequest,
    reply: FastifyReply,
    result: Read<P>,
    attempt = 1,
  ): MaybePromise<void> => {
    if (!result.ok) return refuse(request, reply, result);
    const caller = result.value;
    request.caller = caller;
    const { account, keyId, origins } = caller;
    // A publishable key has budgets of its own: the key's in its account, and each address's;
    // its bans fall on the address that kept sending, never on the key all its pages share.
    const pool = origins === null || keyId === null ? undefined : keyId;
    if (pool !== undefined) openToPage(request, reply);
    // Shared mode: the account's versions are read with its counts, and the request is counted
    // only if the key was verified under the account's keys version now.
    const subject = {
      id: account.id,
      banId:
        pool === undefined
          ? (keyId ?? `password:${account.id}`)
          : `${pool}@${addressBlock(request.ip)}`,
      withVersions: confirm !== undefined,
      pool,
    };
    const expect = confirm?.expect(caller);
    // Once a request, not again when the key is read anew.
    const perAddress =
      pool === undefined || attempt > 1
        ? undefined
        : limits.charge(
            request,
            reply,
            { ...clientSubject(request), banId: pool, pool },
            perAddressOf(account.limits),
          );
    // From a page the key does not list, the key's own budget is not touched: the request is
    // refused (src/http/browser-access.ts) counted against its address alone.
    const counted = andThen(perAddress, () =>
      pool !== undefined && !fromListedOrigin(request)
        ? undefined
        : limits.charge(request, reply, subject, account.limits, expect),
    );
    return andThen(counted, (stale) => {
      if (stale === undefined || confirm === undefined) return;
      const again = confirm.again(request, caller, stale.versions);
      if (again === undefined) return;
      if (stale.versions === undefined) {
        // Let through uncounted (the store is away): read, and go on as read.
        return andThen(again, (fresh) => {
          if (!fresh.ok) return refuse(request, reply, fresh);
          request.caller = fresh.value;
        });
      }
      // The keys changed (or were never confirmed here): counted once read again.
      if (attempt >= 3) {
        throw new ApiError('service_unavailable', KEYS_CHANGING, undefined, RETRY_SOON);
      }
      return andThen(again, (next) => admit(request, reply, next, attempt + 1));
    });
  };
  return (request, reply, done) => {
    let admitted: MaybePromise<void>;
    try {
      admitted = andThen(read(request), (result) => admit(request, reply, result));
      if (authorize) admitted = andThen(admitted, () => authorize(request));
    } catch (err) {
      done(asError(err));
      return;
    }
    if (admitted instanceof Promise)
      admitted.then(
        () => done(),
        (err) => done(asError(err)),
      );
    else done();
  };
}

const KEYS_CHANGING = "This account's keys are changing; retry in a moment.";

/** What was thrown, as an Error: `done(undefined)` would let the request through. */
function asError(thrown: unknown): Error {
  return thrown instanceof Error ? thrown : new Error(`auth hook failed: ${String(thrown)}`);
}

/**
 * Bearer keys. A connection that sends a header one of its earlier requests did is the same
 * caller, and its key is not hashed and looked up again (a keep-alive client's usual case, and
 * a gateway's), under the key cache's own rules (KeyAuthenticator.keptOn): embedded, while no
 * key or plan changed and no other process committed; in the shared mode, for 30 s at most and
 * confirmed by the counting script like any kept verification. A few headers per connection
 * are kept, by the app's KeyAuthenticator, and only as long as the connection. Gives, for an
 * operation's scope, the operation's onRequest hook (`behindBearerKeys` puts it on each route).
 */
export function bearerAuth(keys: KeyAuthenticator, limits: RateLimitGuard, freshness: Freshness) {
  const remember = (
    request: FastifyRequest,
    header: string | undefined,
    result: Result<Principal, AuthFailure>,
  ) => {
    if (header !== undefined) keys.keepOn(request.raw.socket, header, result);
    return result;
  };
  const read = (request: FastifyRequest) => {
    const header = request.headers.authorization;
    const known = header === undefined ? undefined : keys.keptOn(request.raw.socket, header);
    if (known !== undefined) return known;
    return andThen(readBearer(keys, header), (result) => remember(request, header, result));
  };
  const confirm: Confirm<Principal> = {
    expect: (principal) => freshness.keyExpected(principal.kept),
    again: (request, principal, versions) => {
      const check = freshness.keyConfirmed(principal.kept, versions);
      if (check.confirmed) return undefined;
      const header = request.headers.authorization;
      return andThen(readBearer(keys, header, { version: check.version }), (result) =>
        remember(request, header, result),
      );
    },
  };
  // The guard of each operation: the same reading and counting, then the operation's scope
  // and a publishable key's origin (none where no operation matched: nothing is done there
  // but the answer).
  return (needed: Scope | undefined): onRequestHookHandler => {
    const scoped = needed === undefined ? undefined : scopeCheck(needed);
    return guard(
      limits,
      BEARER_CHALLENGE,
      read,
      freshness.versionsCounted ? confirm : undefined,
      scoped === undefined
        ? undefined
        : (request) => {
            scoped(request);
            admitOrigin(request);
          },
    );
  };
}

/**
 * Declares every route of `scope` (and its children) behind a bearer key: each must name the
 * scope it needs (`operation({ scope })`, src/http/operation.ts), or the app stops at start-up;
 * the route pipeline (src/http/route-pipeline.ts) gives each its guard from that declaration. No
 * route behind a key can go without one, and none outside such a scope that names a scope
 * goes without its guard either.
 */
export function behindBearerKeys(scope: FastifyInstance): void {
  scope.addHook('onRoute', (route) => {
    neededScope(route);
  });
}

/** A capability's `routes`: its route plugins, in order, under `prefix`, behind bearer keys. */
export function keyedRoutes(prefix: string, ...plugins: FastifyPluginAsync[]): FastifyPluginAsync {
  return async (app) => {
    await app.register(
      async (scope) => {
        behindBearerKeys(scope);
        for (const plugin of plugins) await scope.register(plugin);
      },
      { prefix },
    );
  };
}

export function basicAuth(
  db: ReadDb,
  passwords: Passwords,
  limits: RateLimitGuard,
  throttle: SignInThrottle,
) {
  return guard(limits, BASIC_CHALLENGE, (request) => readBasic(db, passwords, throttle, request));
}

/** A browser's preflight (OPTIONS), counted per client address block in a pool of its own. */
export function preflights(limits: RateLimitGuard) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    await limits.charge(
      request,
      reply,
      { ...clientSubject(request), pool: 'preflight' },
      PREFLIGHT_LIMITS,
    );
  };
}

/** Operations open to anyone (sign-up) are limited per client address block. */
export function anonymous(limits: RateLimitGuard) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    await limits.charge(request, reply, clientSubject(request), ANONYMOUS_LIMITS);
  };
}

/** Paths of the API (the catalogue and the quickstart), where every answer is counted. */
const API_PATH = /^\/(?:v1|messages)(?:[/?]|$)/;

/**
 * For answers made where no route matched (404, 405): under the API, a bearer key is checked
 * and counted as on any operation, and without one the client address is, so these answers
 * carry the rate-limit headers too and cannot be used to probe for free. Elsewhere (the portal,
 * a stray path) nothing is counted.
 */
export function countApiCaller(
  keys: KeyAuthenticator,
  limits: RateLimitGuard,
  freshness: Freshness,
) {
  const bearer = bearerAuth(keys, limits, freshness)(undefined);
  const ip = anonymous(limits);
  return (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void): void => {
    if (!API_PATH.test(request.url)) {
      done();
      return;
    }
    if (/^bearer /i.test(request.headers.authorization ?? '')) {
      bearer.call(request.server, request, reply, done);
      return;
    }
    ip(request, reply).then(() => done(), done);
  };
}

/** The caller set by the scope's auth hook; a route without one is a wiring bug. */
export function callerOf(request: FastifyRequest): Caller {
  if (!request.caller) throw new Error(`no auth hook on ${request.routeOptions.url}`);
  return request.caller;
}
