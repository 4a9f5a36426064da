import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.js';

/**
 * Each segment gains `ids` (before `entries`) and `bodies` (last), as
 * docs/decisions/0065-request-log-reads-bounded.md says: on SQLite its table is made anew and
 * its rows copied, on PostgreSQL the columns are added. Segments written before keep their
 * bodies inline; their ids are worked out here from their entries (`idsText`, as
 * src/request-log/repository.ts writes them), a hundred at a time.
 */
export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const into = dialect === 'postgres' ? 'request_log_segments' : 'request_log_segments_0016';
  if (dialect === 'postgres') {
    await sql`alter table request_log_segments add column ids text not null default '',
      add column bodies text`.execute(db);
    await sql`alter table request_log_segments alter column ids drop default,
      alter column ids set storage external, alter column bodies set storage external`.execute(db);
  } else {
    await db.schema
      .createTable(into)
      .addColumn('seq', 'integer', (c) => c.primaryKey())
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addColumn('size', 'integer', (c) => c.notNull())
      .addColumn('errors', 'integer', (c) => c.notNull())
      .addColumn('first_at', 'text', (c) => c.notNull())
      .addColumn('last_at', 'text', (c) => c.notNull())
      .addColumn('ids', 'text', (c) => c.notNull())
      .addColumn('entries', 'text', (c) => c.notNull())
      .addColumn('bodies', 'text')
      .execute();
  }
  for (let after = -1; ; ) {
    const { rows } = await sql<{
      seq: number | string;
      account_id: string;
      size: number;
      errors: number;
      first_at: unknown;
      last_at: unknown;
      entries: string | Uint8Array;
    }>`select seq, account_id, size, errors, first_at, last_at, entries
      from request_log_segments where seq > ${after} order by seq limit 100`.execute(db);
    const last = rows.at(-1);
    if (last === undefined) break;
    after = Number(last.seq);
    for (const row of rows) {
      const entries = JSON.parse(entriesText(row.entries)) as unknown[][];
      const ids = idsText(entries.map((places) => String(places[0])));
      if (dialect === 'postgres') {
        await sql`update request_log_segments set ids = ${ids} where seq = ${row.seq}`.execute(db);
      } else {
        await sql`insert into request_log_segments_0016
            (seq, account_id, size, errors, first_at, last_at, ids, entries, bodies)
          values (${row.seq}, ${row.account_id}, ${row.size}, ${row.errors}, ${row.first_at},
            ${row.last_at}, ${ids}, ${row.entries}, null)`.execute(db);
      }
    }
  }
  if (dialect === 'postgres') return;
  await db.schema.dropTable('request_log_segments').execute();
  await sql`alter table request_log_segments_0016 rename to request_log_segments`.execute(db);
  await db.schema
    .createIndex('request_log_segments_account')
    .on('request_log_segments')
    .columns(['account_id', 'seq'])
    .execute();
}

/**
 * A segment's `ids` as the log wrote them when this migration was made (its format is
 * src/request-log/repository.ts's; a migration keeps its own copy, as it must not change): the
 * ids in sixteen parts by FNV-1a of the id, behind a header of where each part ends, six
 * digits each, each part ` a b c ` or empty.
 */
function idsText(ids: readonly string[]): string {
  const parts = Array.from({ length: 16 }, () => '');
  for (const id of ids) {
    let hash = 0x811c9dc5;
    for (let i = 0; i < id.length; i++) hash = Math.imul(hash ^ id.charCodeAt(i), 0x01000193);
    const bucket = (hash >>> 0) % 16;
    parts[bucket] = `${parts[bucket] || ' '}${id} `;
  }
  let end = 0;
  const header = parts.map((part) => {
    end += part.length;
    return String(end).padStart(6, '0');
  });
  return header.join('') + parts.join('');
}

/** Entries as text: SQLite holds them as their UTF-8 bytes. */
function entriesText(entries: string | Uint8Array): string {
  return typeof entries === 'string' ? entries : Buffer.from(entries).toString('utf8');
}
