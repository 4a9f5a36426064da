import fp from 'fastify-plugin';
import { KeyAuthenticator } from '../domain/api-keys.js';
import { type Freshness, localFreshness, nothingKept, sharedFreshness } from '../http/freshness.js';
import { PageCache } from '../http/page-cache.js';
import type { Basics } from './basics.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The versions cached answers are checked against (src/http/freshness.ts). */
    freshness: Freshness;
    /** Verifies API keys, keeping what it verified while its version stands. */
    keys: KeyAuthenticator;
    /** Answered list pages, kept while the version of the data they were read from stands. */
    pages: PageCache;
  }
}

/**
 * What is answered from memory, and the versions that say when it is read again: by the SQLite
 * file, by the versions in Redis beside the counters (PostgreSQL with Redis), or not at all
 * (PostgreSQL alone). Nothing to close: the caches hold no connection, and /metrics shows them.
 */
export const cachesPlugin = fp<Basics>(
  async (app, { config, clock, log }) => {
    const { database, limiter, outages, metrics } = app;
    let freshness: Freshness = nothingKept;
    if (config.shared) freshness = sharedFreshness(limiter, outages, log);
    else if (database.changesElsewhere() !== undefined) {
      freshness = localFreshness(() => database.changesElsewhere() ?? 0);
    }
    const keys = new KeyAuthenticator(database, clock, config.env, freshness);
    const pages = new PageCache(freshness.pagesKeptAtMostMs);
    metrics.watch(() => [pages.cache, ...keys.caches, ...freshness.caches]);
    app.decorate('freshness', freshness);
    app.decorate('keys', keys);
    app.decorate('pages', pages);
  },
  { name: 'caches', dependencies: ['store', 'limits', 'ops'] },
);
