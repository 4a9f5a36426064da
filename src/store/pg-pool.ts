import pg from 'pg';
import { raisedByPostgres } from './store-errors.js';

/** Throws a failure of the store's again, marked as the store's. */
function rethrown(error: unknown): never {
  throw raisedByPostgres(error);
}

/**
 * node-postgres' client, whose queries fail with errors marked as the store's
 * (`raisedByPostgres`): the server's answers (SQLSTATEs) and the loss of the connection alike,
 * whether the query was given a callback or returned a promise (Kysely's driver and
 * PgGroupCommit use the promise). A submittable (a cursor, a stream) reports its own errors, and
 * none is used.
 */
class StoreClient extends pg.Client {}

// An override in the class body would have to restate every overload of `query`; the one
// implementation underneath takes them all.
const query = pg.Client.prototype.query as (this: pg.Client, ...args: unknown[]) => unknown;
StoreClient.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  const last = args.length - 1;
  const callback = args[last];
  if (last > 0 && typeof callback === 'function') {
    args[last] = (err: unknown, result: unknown) => callback(raisedByPostgres(err), result);
  }
  const result = query.apply(this, args);
  return result instanceof Promise ? result.catch(rethrown) : result;
} as pg.Client['query'];

/** What `pg.Pool.connect` calls back with. */
type Connected = (
  err: Error | undefined,
  client: pg.PoolClient | undefined,
  done: (release?: unknown) => void,
) => void;

/** The store's PostgreSQL pool: every failure of `connect` and of its clients' queries is marked
 * as the store's (docs/decisions/0066-client-socket-errors.md). */
export class StorePool extends pg.Pool {
  constructor(config: pg.PoolConfig) {
    super({ ...config, Client: StoreClient });
  }

  override connect(): Promise<pg.PoolClient>;
  override connect(callback: Connected): void;
  override connect(callback?: Connected): Promise<pg.PoolClient> | undefined {
    if (callback) {
      super.connect((err, client, done) => callback(raisedByPostgres(err), client, done));
      return undefined;
    }
    return super.connect().catch(rethrown);
  }
}
