import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../database.js';

/**
 * The request log read by what it shows (docs/decisions/0065-request-log-reads-bounded.md):
 * each segment gains
 *
 * - `ids`: its entries' request ids, in sixteen parts by a hash of the id, with a header saying
 *   where each part ends (`idsText` below, as src/request-log/repository.ts writes it): an entry is found by
 *   id with a text search of one part, a few bytes an entry, never of the entries or bodies;
 * - `bodies`: the request and Error bodies of its 4xx and 5xx entries, a line each, last, apart
 *   from the entries, so that a list, its filters and the id search never read them.
 *
 * Segments written before keep their bodies inline (the format reads both); their ids are
 * worked out here from their entries (the id is the first place of each), a hundred at a time.
 *
 * SQLite reads a row's columns in order, walking every overflow page before the one it wants,
 * so `ids` must come before the large `entries` and `bodies` last: its table is made anew and
 * its rows copied. PostgreSQL keeps large values out of line (stored external, uncompressed, so
 * a part of `ids` is read without the rest), so the columns are added.
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
