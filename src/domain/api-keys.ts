import type { Clock } from '../clock.js';
import type { AppEnv } from '../config.js';
import { sha256 } from '../digest.js';
import type { MaybePromise } from '../maybe.js';
import {
  findKeyAccountId,
  findLiveKeyByHash,
  insertApiKey,
  listLiveKeys,
  revokeApiKey,
  touchApiKey,
} from '../store/api-keys-repository.js';
import type { Database, ReadDb, Tx, Writer } from '../store/database.js';
import { type ApiKeyRow, toIso } from '../store/tables.js';
import { type Account, type AnnounceKeysChanged, toAccount } from './accounts.js';
import { randomBase62 } from './random.js';
import { fail, ok, type Result, type Success } from './result.js';

export interface ApiKey {
  id: string;
  name: string | null;
  prefix: string;
  createdAt: string;
  lastUsedAt: string | null;
}

export interface Principal {
  account: Account;
  keyId: string;
  /**
   * The version of the account's keys the key was verified under (see KeyAuthenticator); in
   * the shared mode, undefined until a version has been read before the key.
   */
  keysVersion?: number | string | undefined;
  /** When the key was read from the store (KeyAuthenticator's monotonic ms): how old what is
   * kept of it is. */
  verifiedAtMs?: number;
}

/** Production keys are `as_live_…`; staging and development keys are `as_test_…`. */
export function keyPrefixFor(env: AppEnv): string {
  return env === 'production' ? 'as_live_' : 'as_test_';
}

const SECRET_LENGTH = 40; // 40 base62 characters: about 238 bits of entropy.
const KEY_SHAPE = /^as_(live|test)_[0-9A-Za-z]{32,128}$/;
const DISPLAY_LENGTH = 12; // `as_test_` and the first four secret characters.
// last_used_at is written at most once a minute per key, not on every request.
const TOUCH_INTERVAL_MS = 60_000;

export function hashApiKey(secret: string): string {
  return sha256(secret);
}

function toApiKey(row: ApiKeyRow): ApiKey {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    createdAt: toIso(row.created_at),
    lastUsedAt: row.last_used_at === null ? null : toIso(row.last_used_at),
  };
}

export async function createApiKey(
  tx: Tx,
  clock: Clock,
  env: AppEnv,
  accountId: string,
  name: string | null,
): Promise<{ key: ApiKey; secret: string }> {
  const secret = keyPrefixFor(env) + randomBase62(SECRET_LENGTH);
  const row = {
    id: `key_${randomBase62(16)}`,
    account_id: accountId,
    name,
    prefix: secret.slice(0, DISPLAY_LENGTH),
    hash: hashApiKey(secret),
    created_at: clock.now().toISOString(),
    last_used_at: null,
    revoked_at: null,
  };
  await insertApiKey(tx, row);
  return { key: toApiKey(row), secret };
}

export async function listApiKeys(db: ReadDb, accountId: string): Promise<ApiKey[]> {
  return (await listLiveKeys(db, accountId)).map(toApiKey);
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
  const revoked = await store.write((tx) => revokeApiKey(tx, accountId, keyId, at), {
    oneStatement: true,
  });
  if (!revoked) return fail('not_found', `No API key ${keyId} in this account.`);
  await announce(accountId);
  return ok(undefined);
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

const INVALID_KEY = fail('invalid_api_key', 'The API key is not valid.');

/**
 * In the shared mode, a verification is also read again after this long, whatever the version
 * says: the bound on how long a change whose announcement Redis lost (see RateLimiter.changed)
 * can go unseen.
 */
export const SHARED_KEPT_MS = 30_000;

/** What a change whose announcement Redis lost can cost, for the messages that say so. */
export const UNANNOUNCED = `other instances may use what they kept for up to ${SHARED_KEPT_MS / 1000} s`;

/** Verified keys kept at most; past it the cache starts again. */
const VERIFIED_CACHE_SIZE = 10_000;

/**
 * Resolves a bearer secret to its account. A revoked key is refused from the next request on,
 * on every instance. Verified keys are kept with the version of the account's keys they were
 * verified under:
 *
 * - embedded (`changesElsewhere`: SQLite, shared by no other instance): a kept verification
 *   stands until a key or a plan changes in this process (`changed`, called by the app's
 *   announcer of such changes) or another process commits anything (the CLI);
 * - shared (PostgreSQL with Redis): the version lives in Redis, read in the same script that
 *   counts the request; a kept verification (for SHARED_KEPT_MS at most) is given back as it
 *   is, and the rate-limit guard counts the request only if its version is still the account's
 *   (else it reads the key again with `reverify`, under the version the script answered).
 *
 * Otherwise (PostgreSQL alone) the store is read on every call.
 */
export class KeyAuthenticator {
  private readonly touched = new Map<string, number>();
  private readonly verified = new Map<string, Success<Principal>>();
  /** Key and plan changes made in this process (embedded: part of the generation). */
  private changesHere = 0;

  private readonly prefix: string;
  private readonly monotonicMs: () => number;

  constructor(
    /** Keys are read from `reader`; their last use is a write. */
    private readonly store: Pick<Database, 'reader' | 'write'>,
    private readonly clock: Clock,
    private readonly env: AppEnv,
    private readonly versions: {
      /** The embedded store's count of other processes' commits (Database.changesElsewhere);
       * undefined where it keeps none. */
      changesElsewhere?: () => number | undefined;
      /** Versions come from the shared store, and the caller confirms them. */
      shared?: boolean;
      /** Milliseconds on a clock that only goes forward (default `performance.now`). */
      monotonicMs?: () => number;
    } = {},
  ) {
    this.prefix = keyPrefixFor(env);
    this.monotonicMs = versions.monotonicMs ?? (() => performance.now());
  }

  /** Where kept verifications are confirmed by the caller (the shared mode). */
  get shared(): boolean {
    return this.versions.shared === true;
  }

  /** At once when the key was verified and kept (see above); else a read. */
  authenticate(secret: string): MaybePromise<Result<Principal, 'invalid_api_key'>> {
    if (!KEY_SHAPE.test(secret)) return INVALID_KEY;
    if (!secret.startsWith(this.prefix)) return this.otherEnvironment(secret);
    const keyHash = hashApiKey(secret);
    // Taken before the read: a write during it makes the entry stale, never the reverse.
    const generation = this.version();
    const known = this.verified.get(keyHash);
    if (known !== undefined && this.stands(known.value)) {
      this.used(known.value.keyId);
      return known;
    }
    return this.lookUp(keyHash, generation);
  }

  /**
   * Whether a verification made earlier may be used as it is (see above): embedded, while the
   * generation it was made under stands; shared, for SHARED_KEPT_MS after the key was read
   * (the caller then confirms its version). One made under no version never stands.
   */
  stands(verified: Pick<Principal, 'keysVersion' | 'verifiedAtMs'>): boolean {
    const { keysVersion, verifiedAtMs } = verified;
    if (keysVersion === undefined) return false;
    if (this.shared) {
      return verifiedAtMs !== undefined && this.monotonicMs() - verifiedAtMs < SHARED_KEPT_MS;
    }
    return keysVersion === this.version();
  }

  /**
   * Reads the key from the store and keeps what is found under `keysVersion`, which the caller
   * read before calling (so a change after it shows as another version, never the reverse);
   * without one, keeps nothing.
   */
  reverify(
    secret: string,
    keysVersion: string | undefined,
  ): MaybePromise<Result<Principal, 'invalid_api_key'>> {
    if (!KEY_SHAPE.test(secret) || !secret.startsWith(this.prefix)) return INVALID_KEY;
    return this.lookUp(hashApiKey(secret), keysVersion);
  }

  private otherEnvironment(secret: string): Result<never, 'invalid_api_key'> {
    const other = secret.startsWith('as_live_') ? 'production' : 'staging or development';
    return fail(
      'invalid_api_key',
      `This API key belongs to the ${other} environment; this is ${this.env}, which takes ${this.prefix}… keys.`,
    );
  }

  private async lookUp(
    keyHash: string,
    version: number | string | undefined,
  ): Promise<Result<Principal, 'invalid_api_key'>> {
    const found = await findLiveKeyByHash(this.store.reader, keyHash);
    if (!found) {
      this.verified.delete(keyHash);
      return fail('invalid_api_key', 'The API key is not valid or has been revoked.');
    }
    const verified = ok({
      account: toAccount(found.account),
      keyId: found.keyId,
      keysVersion: version,
      verifiedAtMs: this.monotonicMs(),
    });
    if (version !== undefined) {
      if (this.verified.size >= VERIFIED_CACHE_SIZE) this.verified.clear();
      this.verified.set(keyHash, verified);
    }
    this.used(found.keyId);
    return verified;
  }

  /**
   * The embedded generation verifications are checked against: one made under a value stands
   * while it does. Undefined where none is kept by it (PostgreSQL).
   */
  version(): number | undefined {
    const elsewhere = this.versions.changesElsewhere?.();
    return elsewhere === undefined ? undefined : elsewhere + this.changesHere;
  }

  /** A key or a plan changed in this process: what was verified before is read again. */
  changed(): void {
    this.changesHere++;
  }

  /** Notes that the key was used now (its `last_used_at`, written at most once a minute). */
  used(keyId: string): void {
    const now = this.clock.now();
    const last = this.touched.get(keyId);
    if (last !== undefined && now.getTime() - last < TOUCH_INTERVAL_MS) return;
    this.touched.set(keyId, now.getTime());
    if (this.touched.size > 10_000) this.touched.clear();
    // Best effort: a missed last-used stamp must never fail the request it rides on.
    const at = now.toISOString();
    this.store
      .write((tx) => touchApiKey(tx, keyId, at), { oneStatement: true })
      .catch(() => this.touched.delete(keyId));
  }
}
