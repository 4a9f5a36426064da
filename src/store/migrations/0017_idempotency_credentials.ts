import type { Kysely } from 'kysely';

/**
 * `idempotency_keys.credential_hash`: who sent the request whose answer is kept (its API key,
 * the account's password, a portal session), as an HMAC under the server's key
 * (src/http/idempotency.ts): a kept answer is replayed only to that credential
 * (docs/decisions/0069-replays-to-their-credential.md). Null in answers kept before, whose
 * sender is not known: those replay as before if they hold no secret, and not at all if they
 * do; they are gone within 24 hours.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('idempotency_keys').addColumn('credential_hash', 'text').execute();
}
