import fp from 'fastify-plugin';
import { withTimeout } from '../clock.js';
import { storeName } from '../config.js';
import { Lifecycle } from '../ops/lifecycle.js';
import { Metrics } from '../ops/metrics.js';
import { startMetricsServer } from '../ops/metrics-server.js';
import { Outages } from '../ops/outages.js';
import { databaseFailure } from '../ops/startup-errors.js';
import type { Basics } from './basics.js';

declare module 'fastify' {
  interface FastifyInstance {
    metrics: Metrics;
    /** Which dependencies are away: their outages are logged once, not per request. */
    outages: Outages;
    /** Starting (API requests 503 until the dependencies answer), serving, or draining. */
    lifecycle: Lifecycle;
    /** Serves /metrics on a listener of its own (METRICS=port), closed with the app; resolves
     * to its URL. Called by src/server.ts, which does all the listening. */
    listenMetrics(host: string, port: number): Promise<string>;
  }
}

export interface OpsOptions extends Basics {
  /** The caller serves once it has waited for the database and migrated (src/server.ts);
   * otherwise the app serves once ready and Redis answers. */
  startLater: boolean;
}

/** How long a dependency may take to answer a probe during an outage. */
const PROBE_TIMEOUT_MS = 1_000;

/**
 * What watches the instance: its metrics, the outages of its dependencies (probed until they
 * are back), and where it is in its life. The probes stop before the store and the limiter
 * they ping close.
 */
export const opsPlugin = fp<OpsOptions>(
  async (app, { config, log, startLater }) => {
    const { database, limiter } = app;
    const metrics = new Metrics(
      { pool: () => database.poolStats() },
      config.metrics.mode !== 'off',
    );
    metrics.watch(() => [...database.caches, ...limiter.caches]);
    // What the requests and the worker find away is logged once an outage, and probed until back.
    const outages = new Outages(
      log,
      {
        database: {
          name: storeName(config.databaseUrl),
          probe: () => database.ping(PROBE_TIMEOUT_MS),
          setting: 'DATABASE_URL',
          permanent: (err) => databaseFailure(err, config.databaseUrl),
        },
        ...(config.redisUrl && {
          redis: {
            name: storeName(config.redisUrl),
            probe: () => withTimeout(limiter.store.ping(), PROBE_TIMEOUT_MS),
            optional: config.rateLimit.onStoreError === 'open',
            setting: 'REDIS_URL',
          },
        }),
      },
      metrics,
    );
    // Half the shutdown deadline for requests being answered; the rest for what closes after.
    const lifecycle = new Lifecycle({ answerWithinMs: config.shutdownTimeoutMs / 2, log });
    let metricsServer: Awaited<ReturnType<typeof startMetricsServer>> | undefined;
    app.decorate('metrics', metrics);
    app.decorate('outages', outages);
    app.decorate('lifecycle', lifecycle);
    app.decorate('listenMetrics', async (host: string, port: number) => {
      metricsServer = await startMetricsServer(metrics, host, port);
      return metricsServer.url;
    });
    if (!startLater) {
      // The caller gave a migrated database (it has answered); Redis is connected to in the
      // background.
      app.addHook('onReady', async () => {
        outages.answered('database');
        if (await outages.untilAnswers('redis')) lifecycle.serve();
      });
    }
    app.addHook('onClose', async () => {
      await metricsServer?.close();
      outages.close();
    });
  },
  { name: 'ops', dependencies: ['store', 'limits'] },
);
