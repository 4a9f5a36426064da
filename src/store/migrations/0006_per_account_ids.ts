import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.js';

/**
 * Ids numbered per account: an account's categories, pets and orders are 1, 2, 3…, whatever
 * other accounts do (src/store/numbered.ts). Each table's key becomes (account_id, id), and
 * `id_counters` holds each account's last number per table. Existing rows keep their ids (so
 * cursors and bookmarks stay valid); each account's counters start at its highest id.
 *
 * An order's open-order index (one per pet) becomes per account too: pet 3 of one account is
 * not pet 3 of another.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  if (dialect === 'postgres') await postgres(db);
  else await sqlite(db);
}

const COUNTERS = sql`
  insert into id_counters (account_id, categories, pets, orders)
  select a.id,
    coalesce((select max(c.id) from categories c where c.account_id = a.id), 0),
    coalesce((select max(p.id) from pets p where p.account_id = a.id), 0),
    coalesce((select max(o.id) from orders o where o.account_id = a.id), 0)
  from accounts a`;

/** In the migrator's transaction (PostgreSQL's DDL is transactional). */
async function postgres(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table id_counters (
      account_id text primary key references accounts (id),
      categories bigint not null default 0,
      pets bigint not null default 0,
      orders bigint not null default 0
    )`.execute(db);
  await COUNTERS.execute(db);
  await sql`alter table pets drop constraint pets_category`.execute(db);
  await sql`
    alter table categories
      drop constraint categories_account_id_id,
      drop constraint categories_pkey,
      alter column id drop identity,
      add primary key (account_id, id)`.execute(db);
  for (const table of ['pets', 'orders']) {
    await sql`
      alter table ${sql.table(table)}
        drop constraint ${sql.id(`${table}_pkey`)},
        alter column id drop identity,
        add primary key (account_id, id)`.execute(db);
  }
  await sql`
    alter table pets add constraint pets_category foreign key (account_id, category_id)
      references categories (account_id, id)`.execute(db);
  // The primary keys are these indexes now.
  await sql`drop index pets_account_id`.execute(db);
  await sql`drop index orders_account_id`.execute(db);
  await sql`drop index orders_open_pet`.execute(db);
  await sql`
    create unique index orders_open_pet on orders (account_id, pet_id)
      where status in ('placed', 'approved')`.execute(db);
}

/**
 * SQLite cannot change a table's key: each table is made anew and its rows copied (SQLite's
 * documented twelve steps), in one transaction of our own (the migrator runs none on SQLite),
 * with foreign keys checked before the commit. The new tables are WITHOUT ROWID: a keyset page
 * of an account is one range of the table's own tree.
 */
async function sqlite(db: Kysely<unknown>): Promise<void> {
  await sql`pragma foreign_keys = off`.execute(db);
  // Immediate: the write lock first (another process migrating at once waits for it, then
  // finds the tables made), never a read that cannot become a write.
  await sql`begin immediate`.execute(db);
  try {
    await sql`
      create table id_counters (
        account_id text primary key references accounts (id),
        categories integer not null default 0,
        pets integer not null default 0,
        orders integer not null default 0
      )`.execute(db);
    await COUNTERS.execute(db);
    await sql`
      create table categories_next (
        account_id text not null references accounts (id),
        id integer not null,
        name text not null,
        created_at text not null,
        primary key (account_id, id)
      ) without rowid`.execute(db);
    await sql`
      insert into categories_next (account_id, id, name, created_at)
      select account_id, id, name, created_at from categories`.execute(db);
    await sql`
      create table pets_next (
        account_id text not null references accounts (id),
        id integer not null,
        name text not null,
        category_id bigint not null,
        status text not null,
        created_at text not null,
        updated_at text not null,
        primary key (account_id, id),
        constraint pets_category foreign key (account_id, category_id)
          references categories (account_id, id)
      ) without rowid`.execute(db);
    await sql`
      insert into pets_next (account_id, id, name, category_id, status, created_at, updated_at)
      select account_id, id, name, category_id, status, created_at, updated_at from pets`.execute(
      db,
    );
    await sql`
      create table orders_next (
        account_id text not null references accounts (id),
        id integer not null,
        pet_id bigint not null,
        status text not null,
        created_at text not null,
        updated_at text not null,
        primary key (account_id, id)
      ) without rowid`.execute(db);
    await sql`
      insert into orders_next (account_id, id, pet_id, status, created_at, updated_at)
      select account_id, id, pet_id, status, created_at, updated_at from orders`.execute(db);
    for (const table of ['pets', 'categories', 'orders']) {
      await sql`drop table ${sql.table(table)}`.execute(db);
      await sql`alter table ${sql.table(`${table}_next`)} rename to ${sql.table(table)}`.execute(
        db,
      );
    }
    await sql`create index pets_account_status_id on pets (account_id, status, id)`.execute(db);
    await sql`create index pets_account_category on pets (account_id, category_id)`.execute(db);
    await sql`create index orders_account_status_id on orders (account_id, status, id)`.execute(db);
    await sql`
      create unique index orders_open_pet on orders (account_id, pet_id)
        where status in ('placed', 'approved')`.execute(db);
    const broken = await sql`pragma foreign_key_check`.execute(db);
    if (broken.rows.length > 0) {
      throw new Error(`per-account ids: ${broken.rows.length} rows fail their foreign keys`);
    }
    await sql`commit`.execute(db);
  } catch (err) {
    await sql`rollback`.execute(db);
    throw err;
  } finally {
    await sql`pragma foreign_keys = on`.execute(db);
  }
}
