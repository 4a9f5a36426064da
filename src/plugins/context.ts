import fp from 'fastify-plugin';
import type { AppContext } from '../http/context.js';
import { IdempotentAnswers } from '../http/idempotency.js';
import type { Basics } from './basics.js';

/**
 * `app.ctx`, what the route plugins read, put together from what the plugins before it
 * decorate the app with (declared below, so it cannot be registered ahead of them), and the
 * idempotency record every POST goes through. It opens nothing.
 */
export const contextPlugin = fp<Basics>(
  async (app, { config, clock, log }) => {
    const { database, freshness } = app;
    const context: AppContext = {
      config,
      log,
      database,
      clock,
      keys: app.keys,
      passwords: app.passwords,
      limiter: app.limiter,
      metrics: app.metrics,
      outages: app.outages,
      pages: app.pages,
      freshness,
      keysChanged: (accountId) => freshness.keysChanged(accountId),
      idempotency: new IdempotentAnswers(database, clock, config.webhooks.secretKeys),
      signIn: app.signIn,
      housekeeping: app.housekeeping,
      lifecycle: app.lifecycle,
    };
    app.decorate('ctx', context);
  },
  {
    name: 'context',
    dependencies: ['store', 'limits', 'ops', 'caches', 'guards', 'housekeeping'],
  },
);
