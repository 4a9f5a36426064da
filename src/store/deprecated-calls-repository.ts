import type { ReadDb, Tx } from './handles.js';

export async function recordCall(
  tx: Tx,
  accountId: string,
  operationId: string,
  at: string,
): Promise<void> {
  await tx
    .insertInto('deprecated_calls')
    .values({ account_id: accountId, operation_id: operationId, calls: 1, last_called_at: at })
    .onConflict((oc) =>
      oc.columns(['account_id', 'operation_id']).doUpdateSet((eb) => ({
        calls: eb('deprecated_calls.calls', '+', 1),
        last_called_at: at,
      })),
    )
    .execute();
}

export async function totalCalls(db: ReadDb, accountId: string): Promise<number> {
  const row = await db
    .selectFrom('deprecated_calls')
    .select((eb) => eb.fn.sum<number>('calls').as('n'))
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}
