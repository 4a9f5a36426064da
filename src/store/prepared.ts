import { createHash } from 'node:crypto';
import { type CompiledQuery, PostgresAdapter } from 'kysely';
import { lentWith, type ReadDb, type Tx } from './handles.js';

/** What builds a prepared statement: a handle and its parameters, by name (see `named`). */
type Builder<H, P, Row> = (db: H, p: P) => { compile(): CompiledQuery<Row> };

/**
 * A hot query built and compiled by Kysely once per database, then run with fresh
 * parameters: building a query costs more than running it from a prepared statement.
 * Parameters are named: the builder declares them as the type of its `p` and uses `p.name`
 * where each goes, and callers pass an object of that type, e.g.
 *
 *     const page = preparedQuery((db, p: { accountId: string; take: number }) =>
 *       db.selectFrom('pets').selectAll().where('account_id', '=', p.accountId).limit(p.take));
 *     await page(reader, { accountId, take: 20 });
 *
 * Which placeholder is which name is read from the compiled query, never written by hand.
 */
export function preparedQuery<P extends Record<string, unknown>, Row>(
  build: Builder<ReadDb, P, Row>,
) {
  return prepared(build);
}

/**
 * As `preparedQuery`, for a statement that changes data (and may return rows): run in a write.
 * On PostgreSQL it is also prepared on the server, once per connection (see `serverName`).
 */
export function preparedWrite<P extends Record<string, unknown>, Row>(build: Builder<Tx, P, Row>) {
  return prepared(build, { onServer: true });
}

/**
 * A prepared write's statement is named on PostgreSQL's server, so it is parsed and planned once
 * per connection, by the name its batch's `Tx` was lent (`Lent.serverStatements`,
 * src/store/pg-group-commit.ts). Reads stay unnamed: a generic plan could serve a big account's
 * page as it serves a small one's (docs/decisions/0028-postgres-group-commit.md).
 */
function serverName(text: string): string {
  if (ALL_COLUMNS.test(text)) {
    throw new Error(`a prepared write names the columns it returns or selects: ${text}`);
  }
  return `w_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
}

/**
 * A prepared statement whose result columns are `*` would fail once a migration adds a column
 * while the process runs ("cached plan must not change result type"): writes name theirs.
 */
const ALL_COLUMNS = /\b(returning|select)\s+(\w+\.)?\*/i;

function prepared<H extends ReadDb, P extends Record<string, unknown>, Row>(
  build: Builder<H, P, Row>,
  options: { onServer?: boolean } = {},
) {
  // Compiled once per database: by its adapter, which a connection's handle shares with the
  // handle it came from (group commit takes a new connection handle for every batch). We use no
  // Kysely plugins, which could make two handles of one adapter write different SQL.
  const compiled = new WeakMap<object, Named<Row>>();
  return async (db: H, parameters: P): Promise<Row[]> => {
    const adapter = db.getExecutor().adapter;
    let once = compiled.get(adapter);
    if (!once) {
      once = named(db, build);
      if (options.onServer && adapter instanceof PostgresAdapter) {
        once.server = serverName(once.query.sql);
      }
      compiled.set(adapter, once);
    }
    const { query, names, server } = once;
    const values = valuesOf(names, parameters);
    const lent = lentWith(db);
    if (lent?.direct) return lent.direct.all(query.sql, values) as Row[];
    const onServer = lent?.serverStatements;
    if (server !== undefined && onServer && !onServer.has(query.sql)) {
      onServer.set(query.sql, server);
    }
    return (await db.executeQuery<Row>({ ...query, parameters: values })).rows;
  };
}

/** A compiled query and the name of each of its parameters, in order. */
interface Named<Row> {
  query: CompiledQuery<Row>;
  names: readonly string[];
  /** A write's name on PostgreSQL's server (see `serverName`). */
  server?: string;
}

/** What the builder's `p` gives for a name: a value Kysely binds as it is, and we recognize. */
class Marker {
  constructor(readonly name: string) {}
}

/**
 * Builds and compiles the query with a marker for each parameter (`p.name`), then names the
 * compiled parameters after the markers found in their places. Fails, the first time the query
 * runs, if the SQL binds a value that is no parameter (a constant: write it into the SQL with
 * `sql.lit` or `sql`), or a parameter the builder used is not bound (Kysely inlined it, or the
 * builder computed with it).
 */
function named<H, P extends Record<string, unknown>, Row>(
  db: H,
  build: Builder<H, P, Row>,
): Named<Row> {
  const markers = new Map<string, Marker>();
  const p = new Proxy(
    {},
    {
      get(_, name) {
        if (typeof name !== 'string') throw new Error('a prepared query parameter is named');
        let marker = markers.get(name);
        if (!marker) {
          marker = new Marker(name);
          markers.set(name, marker);
        }
        return marker;
      },
    },
  ) as P;
  const query = build(db, p).compile();
  const names = query.parameters.map((value, i) => {
    if (value instanceof Marker) return value.name;
    throw new Error(
      `prepared query binds a value that is no named parameter (${i + 1}: ${JSON.stringify(value)}): ${query.sql}`,
    );
  });
  for (const name of markers.keys()) {
    if (!names.includes(name)) {
      throw new Error(`prepared query parameter ${name} is not bound by the SQL: ${query.sql}`);
    }
  }
  return { query, names };
}

/** The values of `parameters`, in the order of the compiled query's placeholders. */
function valuesOf(names: readonly string[], parameters: object): unknown[] {
  const values = new Array<unknown>(names.length);
  for (let i = 0; i < names.length; i++) {
    values[i] = (parameters as Record<string, unknown>)[names[i] as string];
  }
  return values;
}
