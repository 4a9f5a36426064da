import fp from 'fastify-plugin';
import type { WebhookRules } from '../domain/webhooks.js';
import { createWebhooks } from '../ops/background.js';
import type { WebhookDispatcher } from '../webhooks/dispatcher.js';
import type { Basics } from './basics.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** What webhook endpoints need: the store, the clock, the secrets' box, the address rules. */
    webhooks: WebhookRules;
    /** Sends webhook deliveries (started with the worker). */
    dispatcher: WebhookDispatcher;
  }
}

/** Webhooks: the rules endpoints are made under, and the dispatcher, started with the worker
 * (WORKER=on) and closed, its deliveries in flight ended, when the app closes. */
export const webhooksPlugin = fp<Basics>(
  async (app, { config, clock, log }) => {
    const { database, outages, metrics } = app;
    const { rules, dispatcher } = createWebhooks({
      config,
      database,
      clock,
      log,
      outages,
      metrics,
    });
    app.decorate('webhooks', rules);
    app.decorate('dispatcher', dispatcher);
    if (config.worker) app.lifecycle.whenServing(() => dispatcher.start());
    app.addHook('onClose', async () => {
      await dispatcher.close();
    });
  },
  { name: 'webhooks', dependencies: ['store', 'ops'] },
);
