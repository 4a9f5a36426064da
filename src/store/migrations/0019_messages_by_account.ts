import type { Kysely } from 'kysely';

/**
 * `messages_account`: an account's messages found by its id, so that a sandbox reset
 * (src/sandbox/repository.ts) deletes its own rows without reading every account's
 * (docs/decisions/0084-sandbox-reset.md).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('messages_account')
    .on('messages')
    .columns(['account_id', 'id'])
    .execute();
}
