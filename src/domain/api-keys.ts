import { BoundedCache, type CacheStats } from '../bounded-cache.js';
import { type Clock, millisOf } from '../clock.js';
import type { AppEnv } from '../config.js';
import { sha256 } from '../digest.js';
import type { MaybePromise } from '../maybe.js';
import {
  countLiveKeys,
  findKeyAccountId,
  findLiveKeyByHash,
  insertApiKey,
  insertKeyOrigins,
  keyOrigins,
  listLiveKeys,
  revokeApiKey,
  touchApiKey,
} from '../store/api-keys-repository.js';
import { change, commit, type Write } from '../store/change.js';
import type { Database, ReadDb, Tx, Writer } from '../store/database.js';
import { type ApiKeyRow, toIso } from '../store/tables.js';
import { type Account, type AnnounceKeysChanged, toAccount } from './accounts.js';
import { randomBase62 } from './random.js';
import { fail, ok, type Result, type Success } from './result.js';
import { type Grant, normalizeScopes, type Scope, storedScopes } from './scopes.js';

/**
 * A secret key is kept on a server; a publishable key is meant to be published in a web page:
 * it only reads the catalogue, and only from the origins it lists
 * (docs/decisions/0087-publishable-keys.md).
 */
export type KeyType = 'secret' | 'publishable';

/** What a publishable key may do, whatever was asked when it was made. */
export const PUBLISHABLE_SCOPES = ['pets:read', 'categories:read'] as const satisfies Scope[];

/** Whether a publishable key may call an operation that needs `scope`. */
export function isPublishableScope(scope: Scope | undefined): boolean {
  return (PUBLISHABLE_SCOPES as readonly (Scope | undefined)[]).includes(scope);
}

/** Origins a publishable key may list, and the length of each as a browser sends it. */
export const MAX_ORIGINS = 10;
export const MAX_ORIGIN_LENGTH = 200;

export interface ApiKey {
  id: string;
  name: string | null;
  type: KeyType;
  prefix: string;
  /** Its scopes, or null: full access. */
  scopes: Scope[] | null;
  /** A publishable key's origins; null for a secret key. */
  allowedOrigins: string[] | null;
  createdAt: string;
  lastUsedAt: string | null;
}

/** What a key to make is: a secret key (with scopes, or null: full access), or a publishable
 * key for these origins (normalized by `originOf`). */
export type KeySpec =
  | { name: string | null; type: 'secret'; scopes: readonly Scope[] | null }
  | { name: string | null; type: 'publishable'; origins: readonly string[] };

/** A secret key named `name`, with these scopes (null: full access). */
export function secretKey(name: string | null, scopes: readonly Scope[] | null = null): KeySpec {
  return { name, type: 'secret', scopes };
}

/** Under what a key verification is kept; what that allows is Freshness's rule. */
export interface KeptUnder {
  /** The version of the account's keys it was read under; undefined: not to be kept. */
  readonly version: number | string | undefined;
  /** When it was read (monotonic ms), where age matters. */
  readonly atMs: number;
}

/** Where verifications are kept, and until when: Freshness (src/http/freshness.ts). */
export type KeyFreshness = {
  keyRead(version?: string): KeptUnder;
  keyStands(kept: KeptUnder): boolean;
};

/** Read-only, and frozen once kept: one is shared by every request that uses the key. */
export interface Principal {
  readonly account: Account;
  readonly keyId: string;
  /** What the key may do (src/domain/scopes.ts). */
  readonly scopes: Grant;
  /** A publishable key's origins, the only ones it is served to; null: a secret key. */
  readonly origins: readonly string[] | null;
  /** Under what this verification is kept. */
  readonly kept: KeptUnder;
}

/**
 * Production keys are `as_live_…`; staging and development keys are `as_test_…`; publishable
 * keys are `as_pk_live_…` and `as_pk_test_…`.
 */
export function keyPrefixFor(env: AppEnv, type: KeyType = 'secret'): string {
  const kind = type === 'publishable' ? 'as_pk_' : 'as_';
  return `${kind}${env === 'production' ? 'live' : 'test'}_`;
}

/** Whether a key (its secret, or its prefix) is a publishable one. */
export function isPublishable(secretOrPrefix: string): boolean {
  return secretOrPrefix.startsWith('as_pk_');
}

/**
 * An origin as a browser sends it (`https://shop.example`, a port only where not the scheme's
 * own), from what a person wrote; undefined where that is not an http(s) origin alone (a path,
 * a query, user info or a wildcard).
 */
export function originOf(written: string): string | undefined {
  if (written !== written.trim() || written.includes('*')) return undefined;
  let url: URL;
  try {
    url = new URL(written);
  } catch {
    return undefined;
  }
  const bare = url.username === '' && url.password === '' && url.search === '' && url.hash === '';
  const http = url.protocol === 'https:' || url.protocol === 'http:';
  const whole = url.pathname === '/' && !written.endsWith('?') && !written.endsWith('#');
  // A host in Unicode is sent in punycode, which can be twice as long as what was written.
  return bare && http && whole && url.origin.length <= MAX_ORIGIN_LENGTH ? url.origin : undefined;
}

/** Live keys an account may hold at once: the key list is never longer (it is not paged). */
export const MAX_LIVE_KEYS = 100;

const SECRET_LENGTH = 40; // 40 base62 characters: about 238 bits of entropy.
const KEY_SHAPE = /^as_(?:pk_)?(?:live|test)_[0-9A-Za-z]{32,128}$/;
const DISPLAY_CHARACTERS = 4; // The kind (`as_test_`) and the first four secret characters.
// last_used_at is written at most once a minute per key, not on every request.
const TOUCH_INTERVAL_MS = 60_000;

export function hashApiKey(secret: string): string {
  return sha256(secret);
}

/** A key's scopes as stored: a JSON array, or null for full access. */
function scopesOf(stored: string | null): Scope[] | null {
  if (stored === null) return null;
  const parsed: unknown = JSON.parse(stored);
  // A scope this version does not know (written by a newer one) grants nothing here.
  return Array.isArray(parsed) ? storedScopes(parsed) : [];
}

/** A key as shown, from its row and (a publishable key's) origins. */
function toApiKey(row: ApiKeyRow, origins: readonly string[] | undefined): ApiKey {
  const publishable = isPublishable(row.prefix);
  return {
    id: row.id,
    name: row.name,
    type: publishable ? 'publishable' : 'secret',
    prefix: row.prefix,
    scopes: publishable ? [...PUBLISHABLE_SCOPES] : scopesOf(row.scopes),
    allowedOrigins: publishable ? [...(origins ?? [])] : null,
    createdAt: toIso(row.created_at),
    lastUsedAt: row.last_used_at === null ? null : toIso(row.last_used_at),
  };
}

export async function createApiKey(
  tx: Tx,
  clock: Clock,
  env: AppEnv,
  accountId: string,
  spec: KeySpec,
): Promise<{ key: ApiKey; secret: string }> {
  const prefix = keyPrefixFor(env, spec.type);
  const secret = prefix + randomBase62(SECRET_LENGTH);
  // A publishable key's grant is its kind's, whatever is stored; what is stored says it too.
  const scopes = spec.type === 'publishable' ? PUBLISHABLE_SCOPES : spec.scopes;
  const origins = spec.type === 'publishable' ? [...new Set(spec.origins)] : undefined;
  const row = {
    id: `key_${randomBase62(16)}`,
    account_id: accountId,
    name: spec.name,
    prefix: secret.slice(0, prefix.length + DISPLAY_CHARACTERS),
    hash: hashApiKey(secret),
    scopes: scopes === null ? null : JSON.stringify(normalizeScopes(scopes)),
    created_at: clock.now().toISOString(),
    last_used_at: null,
    revoked_at: null,
  };
  await insertApiKey(tx, row);
  if (origins !== undefined) await insertKeyOrigins(tx, row.id, origins);
  return { key: toApiKey(row, origins), secret };
}

/**
 * A new key, unless the account holds MAX_LIVE_KEYS already, as a change: how keys are made for
 * people (the API, the portal, the CLI). Counted in the transaction of the insert; two requests
 * racing at the limit on PostgreSQL may pass it by one, and the list still shows MAX_LIVE_KEYS.
 */
export function addApiKey(
  clock: Clock,
  env: AppEnv,
  accountId: string,
  spec: KeySpec,
): Write<Result<{ key: ApiKey; secret: string }, 'key_limit_reached'>> {
  return change(async (tx) => {
    if ((await countLiveKeys(tx, accountId)) >= MAX_LIVE_KEYS) {
      return fail(
        'key_limit_reached',
        `This account has ${MAX_LIVE_KEYS} live keys, the most it may hold; revoke one first.`,
      );
    }
    return ok(await createApiKey(tx, clock, env, accountId, spec));
  });
}

/**
 * The key to make from what a person asked: a publishable key when origins are given (each
 * an http(s) origin, at most MAX_ORIGINS, and no scopes: its own are fixed), else a secret key.
 */
export function keySpec(asked: {
  name?: string | null;
  type?: KeyType;
  scopes?: readonly Scope[] | null;
  allowedOrigins?: readonly string[];
}): Result<KeySpec, 'validation_failed'> {
  const name = asked.name ?? null;
  const type = asked.type ?? 'secret';
  if (type === 'secret') {
    if (asked.allowedOrigins !== undefined) {
      return fail(
        'validation_failed',
        'Only a publishable key lists origins: send `"type": "publishable"` with ' +
          '`allowedOrigins`, or leave `allowedOrigins` out for a secret key.',
      );
    }
    return ok({ name, type, scopes: asked.scopes ?? null });
  }
  if (asked.scopes !== undefined && asked.scopes !== null) {
    return fail(
      'validation_failed',
      `A publishable key only reads the catalogue (${PUBLISHABLE_SCOPES.join(', ')}): leave ` +
        '`scopes` out, or make a secret key for more.',
    );
  }
  const written = asked.allowedOrigins ?? [];
  if (written.length === 0 || written.length > MAX_ORIGINS) {
    return fail(
      'validation_failed',
      `Send \`allowedOrigins\`: the 1 to ${MAX_ORIGINS} origins of the pages that will use ` +
        'the key, each like `https://shop.example`.',
    );
  }
  const origins: string[] = [];
  for (const origin of written) {
    const parsed = originOf(origin);
    if (parsed === undefined) {
      return fail(
        'validation_failed',
        `${JSON.stringify(origin.slice(0, 100))} is not an origin: send a scheme (http or ` +
          'https), a host and a port if not the usual, like `https://shop.example`, with no ' +
          `path and no wildcard, at most ${MAX_ORIGIN_LENGTH} characters as browsers send it.`,
      );
    }
    origins.push(parsed);
  }
  return ok({ name, type, origins });
}

export async function listApiKeys(db: ReadDb, accountId: string): Promise<ApiKey[]> {
  const rows = await listLiveKeys(db, accountId, MAX_LIVE_KEYS);
  const published = rows.filter((row) => isPublishable(row.prefix)).map((row) => row.id);
  const origins = await keyOrigins(db, published);
  return rows.map((row) => toApiKey(row, origins.get(row.id)));
}

/** Revokes a key: refused from the next request on, on every instance (see `announce`). */
export async function revokeKey(
  store: Writer,
  clock: Clock,
  accountId: string,
  keyId: string,
  announce: AnnounceKeysChanged,
): Promise<Result<void, 'not_found'>> {
  const at = clock.now().toISOString();
  const revoked = await commit(store, {
    work: (tx) => revokeApiKey(tx, accountId, keyId, at),
    options: { blind: true },
    committed: async (done) => {
      if (done) await announce(accountId);
    },
  });
  return revoked
    ? ok(undefined)
    : fail(
        'not_found',
        `No API key ${keyId} in this account; list its keys with \`GET /v1/keys\`.`,
      );
}

/** Operator revocation (CLI): by key id alone, whatever the account. */
export async function revokeKeyById(
  store: Pick<Database, 'reader' | 'write'>,
  clock: Clock,
  keyId: string,
  announce: AnnounceKeysChanged,
): Promise<Result<void, 'not_found'>> {
  const accountId = await findKeyAccountId(store.reader, keyId);
  if (!accountId) return fail('not_found', `No API key ${keyId}.`);
  return revokeKey(store, clock, accountId, keyId, announce);
}

const INVALID_KEY = fail(
  'invalid_api_key',
  'This is not an API key of ours: ours start `as_test_`, `as_live_`, `as_pk_test_` or ' +
    '`as_pk_live_`.',
);

/** Verified keys kept at most; past it the cache starts again. */
const VERIFIED_CACHE_SIZE = 10_000;

/**
 * Credentials a connection may have its keys remembered for: a client's one key, or a
 * gateway's few tenants sharing its keep-alive connections.
 */
const KEYS_PER_CONNECTION = 32;

/**
 * Resolves a bearer secret to its account. Verified keys are kept, each under what Freshness
 * said when it was read, and used again while Freshness says that stands; a revoked key is so
 * refused from the next request on, on every instance.
 */
export class KeyAuthenticator {
  /** When each key's last use was last written, by key id. */
  private readonly touched = new BoundedCache<string, number>('key touches', {
    maxEntries: 10_000,
  });
  /** Verified keys, by the hash of their secret. */
  private readonly verified = new BoundedCache<string, Success<Principal>>('keys', {
    maxEntries: VERIFIED_CACHE_SIZE,
  });
  readonly caches: readonly CacheStats[] = [this.verified, this.touched];
  /**
   * The keys last verified on each connection, by the credentials as the connection sent them
   * (oldest first), so that a connection sending them again is not hashed and looked up again.
   * At most KEYS_PER_CONNECTION a connection, and held weakly by it: gone with the connection,
   * so bounded by the connections open. This authenticator's alone, as the connections are
   * its app's.
   */
  private readonly onConnection = new WeakMap<object, Map<string, Success<Principal>>>();
  private readonly prefix: string;
  private readonly publishablePrefix: string;

  /** The clock's time in ms: read on every request. */
  private readonly millis: () => number;

  constructor(
    /** Keys are read from `reader`; their last use is a write. */
    private readonly store: Pick<Database, 'reader' | 'write'>,
    clock: Clock,
    private readonly env: AppEnv,
    private readonly freshness: KeyFreshness,
  ) {
    this.prefix = keyPrefixFor(env);
    this.publishablePrefix = keyPrefixFor(env, 'publishable');
    this.millis = millisOf(clock);
  }

  /** At once when the key was verified and kept, and that stands; else a read. */
  authenticate(secret: string): MaybePromise<Result<Principal, 'invalid_api_key'>> {
    if (!KEY_SHAPE.test(secret)) return INVALID_KEY;
    if (!this.ofThisEnvironment(secret)) return this.otherEnvironment(secret);
    const keyHash = hashApiKey(secret);
    // Taken before the read: a change during it makes the entry stale, never the reverse.
    const kept = this.freshness.keyRead();
    const known = this.verified.get(keyHash, (entry) => this.stands(entry.value));
    if (known !== undefined) {
      this.used(known.value.keyId);
      return known;
    }
    return this.lookUp(keyHash, kept);
  }

  /**
   * What `connection` was given for the credentials `sent` earlier, while that stands (as a
   * kept verification does); the key counts as used.
   */
  keptOn(connection: object, sent: string): Success<Principal> | undefined {
    const known = this.onConnection.get(connection)?.get(sent);
    if (known === undefined || !this.stands(known.value)) return undefined;
    this.used(known.value.keyId);
    return known;
  }

  /**
   * Keeps what `connection` was given for `sent`, when it was verified under a version (and so
   * only as long as the key cache would keep it); forgets what it had otherwise.
   */
  keepOn(connection: object, sent: string, result: Result<Principal>): void {
    let known = this.onConnection.get(connection);
    if (result.ok && result.value.kept.version !== undefined) {
      if (known === undefined) {
        known = new Map();
        this.onConnection.set(connection, known);
      }
      known.delete(sent);
      known.set(sent, result);
      if (known.size > KEYS_PER_CONNECTION) known.delete(known.keys().next().value as string);
    } else {
      known?.delete(sent);
    }
  }

  /** Whether a verification made earlier may be used as it is (Freshness.keyStands). */
  stands(verified: Principal): boolean {
    return this.freshness.keyStands(verified.kept);
  }

  /**
   * Reads the key from the store and keeps what is found under `version` of the account's
   * keys, which the caller read before calling (so a change after it shows as another
   * version, never the reverse); without one, keeps nothing.
   */
  reverify(
    secret: string,
    version: string | undefined,
  ): MaybePromise<Result<Principal, 'invalid_api_key'>> {
    if (!KEY_SHAPE.test(secret) || !this.ofThisEnvironment(secret)) return INVALID_KEY;
    return this.lookUp(hashApiKey(secret), this.freshness.keyRead(version));
  }

  private ofThisEnvironment(secret: string): boolean {
    return secret.startsWith(this.prefix) || secret.startsWith(this.publishablePrefix);
  }

  private otherEnvironment(secret: string): Result<never, 'invalid_api_key'> {
    const other = /^as_(?:pk_)?live_/.test(secret) ? 'production' : 'staging or development';
    return fail(
      'invalid_api_key',
      `This API key belongs to the ${other} environment, and this server is ${this.env}: use ` +
        `the key there, or get an ${this.prefix}… key here, in the portal's Keys page or with ` +
        '`POST /v1/keys`.',
    );
  }

  private async lookUp(
    keyHash: string,
    kept: KeptUnder,
  ): Promise<Result<Principal, 'invalid_api_key'>> {
    const found = await findLiveKeyByHash(this.store.reader, keyHash);
    if (!found) {
      this.verified.delete(keyHash);
      return fail('invalid_api_key', 'This API key is unknown to this server, or revoked.');
    }
    // Frozen: a request that tried to change what every later request of the key is given
    // would throw, not spread its change.
    const account = toAccount(found.account);
    Object.freeze(account.limits);
    const publishable = isPublishable(found.prefix);
    const origins = publishable ? await keyOrigins(this.store.reader, [found.keyId]) : undefined;
    const verified = Object.freeze(
      ok(
        Object.freeze({
          account: Object.freeze(account),
          keyId: found.keyId,
          scopes: Object.freeze(publishable ? [...PUBLISHABLE_SCOPES] : scopesOf(found.scopes)),
          origins: publishable ? Object.freeze(origins?.get(found.keyId) ?? []) : null,
          kept,
        }),
      ),
    );
    if (kept.version !== undefined) this.verified.set(keyHash, verified);
    this.used(found.keyId);
    return verified;
  }

  /** Notes that the key was used now (its `last_used_at`, written at most once a minute). */
  used(keyId: string): void {
    const nowMs = this.millis();
    if (this.touched.get(keyId, (lastMs) => nowMs - lastMs < TOUCH_INTERVAL_MS) !== undefined) {
      return;
    }
    this.touched.set(keyId, nowMs);
    // Best effort: a missed last-used stamp must never fail the request it rides on.
    const at = new Date(nowMs).toISOString();
    commit(this.store, {
      work: (tx) => touchApiKey(tx, keyId, at),
      options: { blind: true },
    }).catch(() => this.touched.delete(keyId));
  }
}
