import type { Kysely } from 'kysely';

/**
 * `idempotency_keys.credential_hash`: who sent the request whose answer is kept, the only
 * credential it is replayed to; null in answers kept before
 * (docs/decisions/0069-replays-to-their-credential.md).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('idempotency_keys').addColumn('credential_hash', 'text').execute();
}
