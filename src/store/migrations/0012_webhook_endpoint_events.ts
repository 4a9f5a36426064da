import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.js';

/**
 * Webhook endpoints' columns as the table types say them: the event types each endpoint wants
 * move from `event_types` (dropped) to `webhook_endpoint_events`, a row each, and `enabled` is
 * a boolean (docs/decisions/0010-typed-columns.md).
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  if (dialect === 'postgres') await postgres(db);
  else await sqlite(db);
}

/** In the migrator's transaction (PostgreSQL's DDL is transactional). */
async function postgres(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table webhook_endpoint_events (
      endpoint_id text not null references webhook_endpoints (id) on delete cascade,
      event_type text not null,
      primary key (endpoint_id, event_type)
    )`.execute(db);
  await sql`
    insert into webhook_endpoint_events (endpoint_id, event_type)
    select distinct e.id, t.type
    from webhook_endpoints e
      cross join lateral unnest(string_to_array(e.event_types, ' ')) as t (type)
    where t.type <> ''`.execute(db);
  await sql`
    alter table webhook_endpoints
      drop column event_types,
      alter column enabled type boolean using enabled <> 0`.execute(db);
}

/**
 * SQLite cannot change a column's type: `webhook_endpoints` is made anew and its rows copied
 * (SQLite's documented twelve steps, as in 0006), in one transaction of our own (the migrator
 * runs none on SQLite), with foreign keys checked before the commit. They are off meanwhile:
 * dropping the old table would otherwise delete every delivery with it (ON DELETE CASCADE).
 */
async function sqlite(db: Kysely<unknown>): Promise<void> {
  await sql`pragma foreign_keys = off`.execute(db);
  // Immediate: the write lock first (another process migrating at once waits for it, then
  // finds the table made), never a read that cannot become a write.
  await sql`begin immediate`.execute(db);
  try {
    await sql`
      create table webhook_endpoint_events (
        endpoint_id text not null references webhook_endpoints (id) on delete cascade,
        event_type text not null,
        primary key (endpoint_id, event_type)
      ) without rowid`.execute(db);
    // No split() in SQLite: each step takes the type before the first space of what is left.
    await sql`
      insert into webhook_endpoint_events (endpoint_id, event_type)
      with recursive split (endpoint_id, type, rest) as (
        select id, '', trim(event_types) || ' ' from webhook_endpoints
        union all
        select endpoint_id, substr(rest, 1, instr(rest, ' ') - 1),
          substr(rest, instr(rest, ' ') + 1)
        from split
        where rest <> ''
      )
      select distinct endpoint_id, type from split where type <> ''`.execute(db);
    await sql`
      create table webhook_endpoints_next (
        id text primary key,
        account_id text not null references accounts (id),
        url text not null,
        enabled boolean not null,
        disabled_reason text,
        secret text not null,
        previous_secret text,
        previous_secret_until text,
        failing_since text,
        created_at text not null,
        updated_at text not null,
        answered_at text
      )`.execute(db);
    await sql`
      insert into webhook_endpoints_next (id, account_id, url, enabled, disabled_reason, secret,
        previous_secret, previous_secret_until, failing_since, created_at, updated_at, answered_at)
      select id, account_id, url, enabled <> 0, disabled_reason, secret, previous_secret,
        previous_secret_until, failing_since, created_at, updated_at, answered_at
      from webhook_endpoints`.execute(db);
    await sql`drop table webhook_endpoints`.execute(db);
    await sql`alter table webhook_endpoints_next rename to webhook_endpoints`.execute(db);
    await sql`create index webhook_endpoints_account on webhook_endpoints (account_id, id)`.execute(
      db,
    );
    const broken = await sql`pragma foreign_key_check`.execute(db);
    if (broken.rows.length > 0) {
      throw new Error(`endpoint events: ${broken.rows.length} rows fail their foreign keys`);
    }
    await sql`commit`.execute(db);
  } catch (err) {
    await sql`rollback`.execute(db);
    throw err;
  } finally {
    await sql`pragma foreign_keys = on`.execute(db);
  }
}
