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
import type { Db } from '../store/database.js';
import { type ApiKeyRow, toIso } from '../store/tables.js';
import { type Account, toAccount } from './accounts.js';
import { randomBase62 } from './random.js';
import { fail, ok, type Result } from './result.js';

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
  db: Db,
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
  await insertApiKey(db, row);
  return { key: toApiKey(row), secret };
}

export async function listApiKeys(db: Db, accountId: string): Promise<ApiKey[]> {
  return (await listLiveKeys(db, accountId)).map(toApiKey);
}

export async function revokeKey(
  db: Db,
  clock: Clock,
  accountId: string,
  keyId: string,
): Promise<Result<void, 'not_found'>> {
  const revoked = await revokeApiKey(db, accountId, keyId, clock.now().toISOString());
  return revoked ? ok(undefined) : fail('not_found', `No API key ${keyId} in this account.`);
}

/** Operator revocation (CLI): by key id alone, whatever the account. */
export async function revokeKeyById(
  db: Db,
  clock: Clock,
  keyId: string,
): Promise<Result<void, 'not_found'>> {
  const accountId = await findKeyAccountId(db, keyId);
  if (!accountId) return fail('not_found', `No API key ${keyId}.`);
  return revokeKey(db, clock, accountId, keyId);
}

const INVALID_KEY = fail('invalid_api_key', 'The API key is not valid.');

/** Verified keys kept at most; past it the cache starts again. */
const VERIFIED_CACHE_SIZE = 10_000;

/**
 * Resolves a bearer secret to its account. A revoked key is refused from the next request on,
 * on every instance: the store is read on every call, except where the store can say that
 * nothing at all was written since a key was verified (the embedded SQLite store; see
 * `Database.generation`), in which case that verification still stands.
 */
export class KeyAuthenticator {
  private readonly touched = new Map<string, number>();
  private readonly verified = new Map<
    string,
    { found: Result<Principal, never>; keyId: string; generation: number }
  >();

  private readonly prefix: string;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly env: AppEnv,
    private readonly generation: () => number | undefined = () => undefined,
  ) {
    this.prefix = keyPrefixFor(env);
  }

  /** At once when the key was verified since the last write (embedded mode); else a read. */
  authenticate(secret: string): MaybePromise<Result<Principal, 'invalid_api_key'>> {
    if (!KEY_SHAPE.test(secret)) return INVALID_KEY;
    if (!secret.startsWith(this.prefix)) return this.otherEnvironment(secret);
    const keyHash = hashApiKey(secret);
    // Taken before the read: a write during it makes the entry stale, never the reverse.
    const generation = this.generation();
    const known = this.verified.get(keyHash);
    if (known !== undefined && generation !== undefined && known.generation === generation) {
      this.used(known.keyId);
      return known.found;
    }
    return this.lookUp(keyHash, generation);
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
    generation: number | undefined,
  ): Promise<Result<Principal, 'invalid_api_key'>> {
    const found = await findLiveKeyByHash(this.db, keyHash);
    if (!found) return fail('invalid_api_key', 'The API key is not valid or has been revoked.');
    const principal = { account: toAccount(found.account), keyId: found.keyId };
    if (generation !== undefined) {
      if (this.verified.size >= VERIFIED_CACHE_SIZE) this.verified.clear();
      this.verified.set(keyHash, { found: ok(principal), keyId: found.keyId, generation });
    }
    this.used(found.keyId);
    return ok(principal);
  }

  /**
   * What verifications are checked against: a verification made under one value stands while
   * it does. Undefined where none may be kept.
   */
  version(): number | undefined {
    return this.generation();
  }

  /** Notes that the key was used now (its `last_used_at`, written at most once a minute). */
  used(keyId: string): void {
    const now = this.clock.now();
    const last = this.touched.get(keyId);
    if (last !== undefined && now.getTime() - last < TOUCH_INTERVAL_MS) return;
    this.touched.set(keyId, now.getTime());
    if (this.touched.size > 10_000) this.touched.clear();
    // Best effort: a missed last-used stamp must never fail the request it rides on.
    touchApiKey(this.db, keyId, now.toISOString()).catch(() => this.touched.delete(keyId));
  }
}
