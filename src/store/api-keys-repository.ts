import type { Insertable } from 'kysely';
import type { ReadDb, Tx } from './handles.js';
import { preparedQuery } from './prepared.js';
import type { AccountRow, ApiKeyRow, ApiKeysTable } from './tables.js';

export async function insertApiKey(tx: Tx, row: Insertable<ApiKeysTable>): Promise<void> {
  await tx.insertInto('api_keys').values(row).execute();
}

export interface KeyWithAccount {
  keyId: string;
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
  const { key_id, key_scopes, ...account } = row;
  return { keyId: key_id, scopes: key_scopes, account };
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
