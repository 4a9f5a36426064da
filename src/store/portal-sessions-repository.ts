import type { Insertable } from 'kysely';
import type { Db } from './database.js';
import type { AccountRow, PortalSessionsTable } from './tables.js';

export async function insertSession(db: Db, row: Insertable<PortalSessionsTable>): Promise<void> {
  await db.insertInto('portal_sessions').values(row).execute();
}

/** The account of the unexpired session with this hash, in one query. */
export function findSessionAccount(
  db: Db,
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

export async function deleteSession(db: Db, idHash: string): Promise<void> {
  await db.deleteFrom('portal_sessions').where('id_hash', '=', idHash).execute();
}

export async function deleteExpiredSessions(db: Db, now: string): Promise<number> {
  const result = await db
    .deleteFrom('portal_sessions')
    .where('expires_at', '<=', now)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
