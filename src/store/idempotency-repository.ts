import type { Insertable } from 'kysely';
import { deleteBatch, type Rows } from './batch-delete.js';
import type { ReadDb, Tx } from './handles.js';
import { preparedWrite } from './prepared.js';
import type { IdempotencyKeyRow, IdempotencyKeysTable } from './tables.js';

const keepAnswerQuery = preparedWrite((tx, p: Insertable<IdempotencyKeysTable>) => {
  // What a key holds: written, or written over when what it held has expired.
  const kept = {
    fingerprint: p.fingerprint,
    answer: p.answer,
    credential_hash: p.credential_hash,
    created_at: p.created_at,
    expires_at: p.expires_at,
  };
  return tx
    .insertInto('idempotency_keys')
    .values({ scope: p.scope, key_hash: p.key_hash, ...kept })
    .onConflict((conflict) =>
      conflict
        .columns(['scope', 'key_hash'])
        .doUpdateSet(kept)
        .where('idempotency_keys.expires_at', '<=', p.created_at),
    )
    .returning('scope');
});

/**
 * Keeps an answer for its key, in the caller's transaction (a prepared statement: it runs in
 * every keyed POST). False when the key already holds an unexpired answer: on PostgreSQL, an
 * insert of the same key by a transaction not yet committed (another instance's) is waited
 * for, so this sees its outcome. An expired answer not yet swept is replaced.
 */
export async function keepAnswer(tx: Tx, row: Insertable<IdempotencyKeysTable>): Promise<boolean> {
  return (await keepAnswerQuery(tx, row)).length > 0;
}

/** The unexpired answer kept for a key, with what it was kept for: the request's fingerprint
 * and the credential that sent it (null in answers kept before migration 0017). */
export function findAnswer(
  db: ReadDb,
  scope: string,
  keyHash: string,
  now: string,
): Promise<Pick<IdempotencyKeyRow, 'fingerprint' | 'answer' | 'credential_hash'> | undefined> {
  return db
    .selectFrom('idempotency_keys')
    .select(['fingerprint', 'answer', 'credential_hash'])
    .where('scope', '=', scope)
    .where('key_hash', '=', keyHash)
    .where('expires_at', '>', now)
    .executeTakeFirst();
}

/** Deletes up to `limit` answers expired by `now`; how many it deleted. */
export function deleteExpiredAnswers(tx: Tx, now: string, limit: number): Promise<number> {
  const expired = (rows: Rows<'idempotency_keys'>) => rows.where('expires_at', '<=', now);
  return deleteBatch(tx, 'idempotency_keys', ['scope', 'key_hash'], expired, limit);
}
