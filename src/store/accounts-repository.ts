import type { Insertable } from 'kysely';
import type { ReadDb, Tx } from './handles.js';
import type { AccountRow, AccountsTable, Plan } from './tables.js';

export async function insertAccount(tx: Tx, row: Insertable<AccountsTable>): Promise<boolean> {
  // ON CONFLICT DO NOTHING: a duplicate email is an expected outcome, not an exception.
  const result = await tx
    .insertInto('accounts')
    .values(row)
    .onConflict((oc) => oc.column('email').doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) === 1;
}

export function findAccountByEmail(db: ReadDb, email: string): Promise<AccountRow | undefined> {
  return db.selectFrom('accounts').selectAll().where('email', '=', email).executeTakeFirst();
}

export function findAccountById(db: ReadDb, id: string): Promise<AccountRow | undefined> {
  return db.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function updateAccountPlan(
  tx: Tx,
  id: string,
  plan: Plan,
  perMinute: number | null,
  perDay: number | null,
): Promise<boolean> {
  const result = await tx
    .updateTable('accounts')
    .set({ plan, per_minute: perMinute, per_day: perDay })
    .where('id', '=', id)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export async function countAccounts(db: ReadDb): Promise<number> {
  const row = await db
    .selectFrom('accounts')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Every account, oldest first (the CLI's `accounts list`; an operator's tool, not an API). */
export function listAccounts(db: ReadDb): Promise<AccountRow[]> {
  return db.selectFrom('accounts').selectAll().orderBy('created_at').orderBy('id').execute();
}

export async function updatePasswordHash(tx: Tx, id: string, hash: string): Promise<boolean> {
  const result = await tx
    .updateTable('accounts')
    .set({ password_hash: hash })
    .where('id', '=', id)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}
