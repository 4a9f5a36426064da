import { type Kysely, sql } from 'kysely';

/**
 * Idempotency keys and fingerprints are kept as HMACs under the server's key, and answers
 * sealed under a key derived from it (docs/decisions/0004-secrets-at-rest.md). The answers kept
 * before were found by unsalted SHA-256s, of the key and of the request (a sign-up's password
 * in it): none is found by the new hashes, so none is kept. A request retried across this
 * upgrade with the same key runs again, as it would once its answer expired (24 hours).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`delete from idempotency_keys`.execute(db);
}
