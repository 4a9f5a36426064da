import type { Kysely } from 'kysely';

/**
 * `api_keys.scopes`: a restricted key's scopes as a JSON array of strings
 * (src/domain/scopes.ts); null for a key with full access, as every key made before had.
 * Read with the key at every verification, never searched: an array column, not a table.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('api_keys').addColumn('scopes', 'text').execute();
}
