import type { Insertable } from 'kysely';
import type { ReadDb, Tx } from './handles.js';
import { preparedQuery } from './prepared.js';
import type { AccountRow, ApiKeyRow, ApiKeysTable } from './tables.js';

export async function insertApiKey(tx: Tx, row: Insertable<ApiKeysTable>): Promise<void> {
  await tx.insertInto('api_keys').values(row).execute();
}

/** A publishable key's origins, each once. */
export async function insertKeyOrigins(
  tx: Tx,
  keyId: string,
  origins: readonly string[],
): Promise<void> {
  await tx
    .insertInto('api_key_origins')
    .values(origins.map((origin) => ({ origin, key_id: keyId })))
    .execute();
}

/** The origins of these keys (at most MAX_LIVE_KEYS of them), by key, each key's sorted. */
export async function keyOrigins(
  db: ReadDb,
  keyIds: readonly string[],
): Promise<Map<string, string[]>> {
  const byKey = new Map<string, string[]>();
  if (keyIds.length === 0) return byKey;
  const rows = await db
    .selectFrom('api_key_origins')
    .select(['key_id', 'origin'])
    .where('key_id', 'in', keyIds)
    .orderBy('key_id')
    .orderBy('origin')
    .execute();
  for (const { key_id, origin } of rows) {
    const origins = byKey.get(key_id) ?? [];
    origins.push(origin);
    byKey.set(key_id, origins);
  }
  return byKey;
}

/** Whether some live publishable key, of any account, lists this origin: an indexed read. */
export async function isPublishedOrigin(db: ReadDb, origin: string): Promise<boolean> {
  const row = await db
    .selectFrom('api_key_origins as o')
    .innerJoin('api_keys as k', 'k.id', 'o.key_id')
    .select('o.key_id')
    .where('o.origin', '=', origin)
    .where('k.revoked_at', 'is', null)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

export interface KeyWithAccount {
  keyId: string;
  /** The first characters of the key: its kind (src/domain/api-keys.ts). */
  prefix: string;
  /** The key's scopes as stored (ApiKeysTable.scopes). */
  scopes: string | null;
  account: AccountRow;
}

const liveKeyByHash = preparedQuery((db, p: { hash: string }) =>
  db
    .selectFrom('api_keys as k')
    .innerJoin('accounts as a', 'a.id', 'k.account_id')
    .select([
      'k.id as key_id',
      'k.prefix as key_prefix',
      'k.scopes as key_scopes',
      'a.id',
      'a.email',
      'a.password_hash',
      'a.plan',
      'a.per_minute',
      'a.per_day',
      'a.created_at',
    ])
    .where('k.hash', '=', p.hash)
    .where('k.revoked_at', 'is', null),
);

/** The live (not revoked) key with this hash, and its account, in one query. */
export async function findLiveKeyByHash(
  db: ReadDb,
  hash: string,
): Promise<KeyWithAccount | undefined> {
  const [row] = await liveKeyByHash(db, { hash });
  if (!row) return undefined;
  const { key_id, key_prefix, key_scopes, ...account } = row;
  return { keyId: key_id, prefix: key_prefix, scopes: key_scopes, account };
}

/** The account's live keys, oldest first, at most `limit`. */
export function listLiveKeys(db: ReadDb, accountId: string, limit: number): Promise<ApiKeyRow[]> {
  return db
    .selectFrom('api_keys')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('revoked_at', 'is', null)
    .orderBy('created_at')
    .orderBy('id')
    .limit(limit)
    .execute();
}

/** How many live keys the account has, read in the transaction that would add one. */
export async function countLiveKeys(tx: Tx, accountId: string): Promise<number> {
  const row = await tx
    .selectFrom('api_keys')
    .select((eb) => eb.fn.countAll().as('count'))
    .where('account_id', '=', accountId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(row?.count ?? 0);
}

export async function revokeApiKey(
  tx: Tx,
  accountId: string,
  keyId: string,
  at: string,
): Promise<boolean> {
  const result = await tx
    .updateTable('api_keys')
    .set({ revoked_at: at })
    .where('id', '=', keyId)
    .where('account_id', '=', accountId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export async function touchApiKey(tx: Tx, keyId: string, at: string): Promise<void> {
  await tx.updateTable('api_keys').set({ last_used_at: at }).where('id', '=', keyId).execute();
}

export async function findKeyAccountId(db: ReadDb, keyId: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('api_keys')
    .select('account_id')
    .where('id', '=', keyId)
    .executeTakeFirst();
  return row?.account_id;
}
