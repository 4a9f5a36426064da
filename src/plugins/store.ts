import fp from 'fastify-plugin';
import { type Database, openDatabase } from '../store/database.js';
import { tracedWrites } from '../store/traced-writes.js';
import type { Basics } from './basics.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The store: SQLite or PostgreSQL (src/store/database.ts). */
    database: Database;
  }
}

export interface StoreOptions extends Basics {
  /** A database the caller opened, and closes. Without one, the plugin opens it from the
   * configuration and closes it with the app. */
  database?: Database | undefined;
}

/**
 * The store. The first plugin registered, so the last closed: after every request has been
 * answered and everything else that writes has stopped, the queued writes are committed (or
 * refused) and the connections close (docs/decisions/0011-app-as-plugins.md).
 */
export const storePlugin = fp<StoreOptions>(
  async (app, { config, log, tracing, database: given }) => {
    const database =
      given ??
      openDatabase(config.databaseUrl, {
        poolSize: config.databasePoolSize,
        statementTimeoutMs: config.databaseStatementTimeoutMs,
        warn: (message) => log.warn(message),
      });
    // With traces on, a write made in a span is a span of its own (docs/decisions/0073).
    app.decorate('database', tracing.enabled ? tracedWrites(database, tracing) : database);
    if (given) return;
    app.addHook('onClose', async () => {
      await database.close();
      log.info('shutdown: database closed');
    });
  },
  { name: 'store' },
);
