import type { Insertable } from 'kysely';
import type { ReadDb, Tx } from './handles.js';
import type { AccountRow, PortalSessionsTable } from './tables.js';

export async function insertSession(tx: Tx, row: Insertable<PortalSessionsTable>): Promise<void> {
  await tx.insertInto('portal_sessions').values(row).execute();
}

/** The account of the unexpired session with this hash, in one query. */
export function findSessionAccount(
  db: ReadDb,
  idHash: string,
  now: string,
): Promise<AccountRow | undefined> {
  return db
    .selectFrom('portal_sessions as s')
    .innerJoin('accounts as a', 'a.id', 's.account_id')
    .selectAll('a')
    .where('s.id_hash', '=', idHash)
    .where('s.expires_at', '>', now)
    .executeTakeFirst();
}

export async function deleteSession(tx: Tx, idHash: string): Promise<void> {
  await tx.deleteFrom('portal_sessions').where('id_hash', '=', idHash).execute();
}

export async function deleteExpiredSessions(tx: Tx, now: string): Promise<number> {
  const result = await tx
    .deleteFrom('portal_sessions')
    .where('expires_at', '<=', now)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Ends every session of an account but the one with `keepHash` (if given): a password change
 * signs out every other browser. */
export async function deleteAccountSessions(
  tx: Tx,
  accountId: string,
  keepHash?: string,
): Promise<number> {
  let query = tx.deleteFrom('portal_sessions').where('account_id', '=', accountId);
  if (keepHash !== undefined) query = query.where('id_hash', '!=', keepHash);
  const result = await query.executeTakeFirst();
  return Number(result.numDeletedRows);
}
