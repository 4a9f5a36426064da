import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import SqliteDatabase from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, sql } from 'kysely';
import { type Migration, Migrator } from 'kysely/migration';
import pg from 'pg';
import { type Dialect, openDatabase } from '../../src/store/database.js';
import { dialects, emptyDatabase } from '../helpers.js';

/**
 * A store migrated by any commit of main since 2af3910 (the first an operator ran) starts on
 * today's code and ends with the schema a new store has. Each version of the migrations folder
 * in the history is taken from git as it was (its files were edited after they landed, and
 * some landed out of order: 0014 before 0012 and 0013, 0017 before 0016), run on an empty
 * store as that commit ran it, and the store then opened and migrated by today's code.
 */
const ROOT = new URL('../..', import.meta.url).pathname;
const FIRST = '2af3910';
const git = (...args: string[]) =>
  execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });

function history(): Array<{ commit: string; tree: string }> {
  try {
    git('rev-parse', '--verify', `${FIRST}^{commit}`);
  } catch {
    return []; // not a clone with main's history (a tarball, a shallow clone)
  }
  const commits = [
    FIRST,
    ...git('rev-list', '--reverse', `${FIRST}..HEAD`, '--', 'src/store/migrations')
      .split('\n')
      .filter(Boolean),
  ];
  const seen = new Set<string>();
  const versions = [];
  for (const commit of commits) {
    const tree = git('rev-parse', `${commit}:src/store/migrations`).trim();
    if (seen.has(tree)) continue;
    seen.add(tree);
    versions.push({ commit: commit.slice(0, 7), tree });
  }
  // Today's folder is what the code migrates with, not a past version.
  const today = git('rev-parse', 'HEAD:src/store/migrations').trim();
  return versions.filter((v) => v.tree !== today);
}

const versions = history();
const scratch = join(ROOT, 'test-output', 'upgrades');
after(() => rmSync(scratch, { recursive: true, force: true }));

/** The migrations as `commit` had them: its `src/` in a folder of the checkout (so its
 * imports, `kysely` among them, resolve), each file loaded as it was. */
async function migrationsAt(commit: string, dialect: Dialect): Promise<Record<string, Migration>> {
  const folder = join(scratch, commit);
  if (!existsSync(folder)) {
    mkdirSync(folder, { recursive: true });
    execFileSync('sh', ['-c', `git archive ${commit} src | tar -x -C "${folder}"`], { cwd: ROOT });
  }
  const dir = join(folder, 'src', 'store', 'migrations');
  const found: Record<string, Migration> = {};
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.ts'))
    .sort()) {
    const module = (await import(pathToFileURL(join(dir, file)).href)) as {
      up: (db: Kysely<unknown>, dialect: Dialect) => Promise<void>;
    };
    found[file.replace(/\.ts$/, '')] = { up: (db) => module.up(db, dialect) };
  }
  return found;
}

function kyselyOn(url: string): Kysely<unknown> {
  if (url.startsWith('sqlite:')) {
    return new Kysely({
      dialect: new SqliteDialect({ database: new SqliteDatabase(url.slice('sqlite:'.length)) }),
    });
  }
  return new Kysely({
    dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: 1 }) }),
  });
}

/** What the store's schema is, in a form two stores can be compared by: each table's columns
 * (type, null or not, default), its indexes and constraints, whatever order made them. */
async function schemaOf(db: Kysely<unknown>, dialect: Dialect): Promise<string[]> {
  const facts: string[] = [];
  const squeeze = (text: unknown) =>
    String(text ?? '')
      .replace(/\s+/g, ' ')
      .replace(/"/g, '')
      .trim();
  if (dialect === 'sqlite') {
    const { rows: tables } = await sql<{
      name: string;
      type: string;
      sql: string | null;
      tbl_name: string;
    }>`
      select name, type, sql, tbl_name from sqlite_master
      where name not like 'sqlite_%' and tbl_name not like 'kysely_%'`.execute(db);
    for (const table of tables) {
      if (table.type === 'table') {
        const { rows } = await sql<{
          name: string;
          type: string;
          notnull: number;
          dflt_value: unknown;
          pk: number;
        }>`
          select * from pragma_table_info(${table.name})`.execute(db);
        for (const c of rows) {
          facts.push(
            `${table.name}.${c.name} ${c.type.toLowerCase()} ${c.notnull ? 'not null' : 'null'} default ${squeeze(c.dflt_value)} pk ${c.pk}`,
          );
        }
        const { rows: keys } = await sql<Record<string, unknown>>`
          select "table", "from", "to", on_delete from pragma_foreign_key_list(${table.name})`.execute(
          db,
        );
        for (const k of keys)
          facts.push(`${table.name} fk ${k.from} -> ${k.table}.${k.to} ${k.on_delete}`);
      } else if (table.sql) {
        // Indexes and triggers, as written (index names are part of the schema).
        facts.push(
          `${table.type} ${table.name} ${squeeze(table.sql).replace(/^create (unique )?(index|trigger) (if not exists )?\S+/i, '$1')}`,
        );
      }
    }
  } else {
    const { rows } = await sql<Record<string, unknown>>`
      select table_name, column_name, data_type, is_nullable, column_default
      from information_schema.columns
      where table_schema = 'public' and table_name not like 'kysely_%'`.execute(db);
    for (const c of rows) {
      facts.push(
        `${c.table_name}.${c.column_name} ${c.data_type} ${c.is_nullable === 'YES' ? 'null' : 'not null'} default ${squeeze(c.column_default)}`,
      );
    }
    const { rows: indexes } = await sql<{ indexdef: string }>`
      select indexdef from pg_indexes where schemaname = 'public' and tablename not like 'kysely_%'`.execute(
      db,
    );
    for (const i of indexes) facts.push(squeeze(i.indexdef));
    const { rows: constraints } = await sql<{ relname: string; conname: string; def: string }>`
      select r.relname, c.conname, pg_get_constraintdef(c.oid) as def
      from pg_constraint c join pg_class r on r.oid = c.conrelid
      join pg_namespace n on n.oid = r.relnamespace
      where n.nspname = 'public' and r.relname not like 'kysely_%'`.execute(db);
    for (const c of constraints) facts.push(`${c.relname} ${c.conname} ${squeeze(c.def)}`);
  }
  return facts.sort();
}

async function schemaAt(url: string, dialect: Dialect): Promise<string[]> {
  const db = kyselyOn(url);
  try {
    return await schemaOf(db, dialect);
  } finally {
    await db.destroy();
  }
}

for (const dialect of dialects) {
  describe(`upgrades from every past store (${dialect})`, {
    skip: versions.length === 0 && 'needs a clone with main’s history since 2af3910',
  }, () => {
    let fresh: string[];

    it('a new store, as today’s code makes it', async () => {
      const made = await emptyDatabase(dialect);
      try {
        const database = openDatabase(made.url, { poolSize: 1 });
        try {
          await database.schema.migrate();
        } finally {
          await database.close();
        }
        fresh = await schemaAt(made.url, dialect);
        assert.ok(fresh.length > 50, 'a schema to compare with');
      } finally {
        await made.drop();
      }
    });

    for (const { commit } of versions) {
      it(`starts on a store migrated by ${commit}, with a new store's schema`, async () => {
        const made = await emptyDatabase(dialect);
        try {
          const past = kyselyOn(made.url);
          try {
            const migrator = new Migrator({
              db: past,
              provider: { getMigrations: () => migrationsAt(commit, dialect) },
            });
            const { error } = await migrator.migrateToLatest();
            if (error) throw error;
          } finally {
            await past.destroy();
          }
          const database = openDatabase(made.url, { poolSize: 1 });
          try {
            await database.schema.migrate();
            await database.schema.assertCurrent();
          } finally {
            await database.close();
          }
          assert.deepEqual(await schemaAt(made.url, dialect), fresh);
        } finally {
          await made.drop();
        }
      });
    }
  });
}
