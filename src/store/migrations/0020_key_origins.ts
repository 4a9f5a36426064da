import type { Kysely } from 'kysely';

/**
 * `api_key_origins`: the origins each publishable key may be used from
 * (docs/decisions/0087-publishable-keys.md). Led by the origin, so that a browser's preflight,
 * which carries no key, is answered by one indexed read: is this origin some live publishable
 * key's? A key's own origins are read by `api_key_origins_key`.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('api_key_origins')
    .addColumn('origin', 'text', (c) => c.notNull())
    .addColumn('key_id', 'text', (c) => c.notNull().references('api_keys.id'))
    .addPrimaryKeyConstraint('api_key_origins_pk', ['origin', 'key_id'])
    .execute();
  await db.schema
    .createIndex('api_key_origins_key')
    .on('api_key_origins')
    .columns(['key_id', 'origin'])
    .execute();
}
