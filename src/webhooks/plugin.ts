import fp from 'fastify-plugin';
import type { Capability } from '../capability.js';
import { secondsSince } from '../clock.js';
import { SecretBox } from '../domain/secret-box.js';
import { keyedRoutes } from '../http/auth.js';
import type { Basics } from '../plugins/basics.js';
import { DELIVERY_HEADERS, WebhookDispatcher } from './dispatcher.js';
import { disabledNotices, type WebhookRules } from './domain.js';
import { eventsKeptSince, TEST_EVENT_TYPE } from './events.js';
import { deleteOldDeliveries, deleteOldEvents } from './events-repository.js';
import { eventRoutes } from './events-routes.js';
import { Event, EventPage, EventType, WebhookTestData } from './events-schemas.js';
import { webhookPages } from './portal.js';
import { dueBacklog } from './repository.js';
import { webhookRoutes } from './routes.js';
import {
  DeliveryPage,
  NewWebhook,
  RecoverRequest,
  Recovery,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointList,
  WebhookEndpointWithSecret,
  WebhookPatch,
} from './schemas.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** What webhook endpoints need: the store, the clock, the secrets' box, the address rules. */
    webhooks: WebhookRules;
    /** Sends webhook deliveries (started with the worker). */
    dispatcher: WebhookDispatcher;
  }
}

/** The rules endpoints are made under, and the dispatcher, started with the worker
 * (WORKER=on) and closed, its deliveries in flight ended, when the app closes. */
/** What the backlog's count reads at most: a bounded read, whatever the backlog. */
const BACKLOG_CAP = 100_000;

const services = fp<Basics>(
  async (app, { config, clock, log, tracing }) => {
    const { database, outages, metrics } = app;
    const box = new SecretBox(config.webhooks.secretKeys);
    const policy = { allowLoopback: config.webhooks.allowLoopback };
    const dispatcher = new WebhookDispatcher(
      database,
      clock,
      box,
      config.webhooks,
      policy,
      log,
      outages,
      (outcome) => metrics.webhookDelivery(outcome),
      tracing,
    );
    // The backlog: how many deliveries wait past their time, and how long the first has.
    // Read once a scrape: both gauges collect at once and share the read in flight.
    let reading: ReturnType<typeof dueBacklog> | undefined;
    const backlog = () =>
      (reading ??= dueBacklog(database.reader, clock.now().toISOString(), BACKLOG_CAP).finally(
        () => {
          reading = undefined;
        },
      ));
    metrics.storeGauge(
      'webhook_deliveries_due',
      `Webhook deliveries due and not yet sent, over every account (counted up to ${BACKLOG_CAP}).`,
      async () => (await backlog()).due,
    );
    metrics.storeGauge(
      'webhook_oldest_due_seconds',
      'How long the longest-waiting due webhook delivery has waited past its time (0: none).',
      async () => secondsSince(clock, (await backlog()).oldest),
    );
    app.decorate('webhooks', { database, clock, box, policy });
    app.decorate('dispatcher', dispatcher);
    if (config.worker) app.lifecycle.whenServing(() => dispatcher.start());
    app.addHook('onClose', async () => {
      await dispatcher.close();
    });
  },
  { name: 'webhooks', dependencies: ['store', 'ops'] },
);

const before = (now: string) => eventsKeptSince(new Date(now));

/**
 * Events and webhooks (docs/decisions/0042-events-outbox.md, 0043): every change's events,
 * written in its transaction with a delivery to each endpoint that wants them (the outbox), and
 * the dispatcher that sends those deliveries, signed; `/v1/events…`, `/v1/webhooks…` and the
 * portal's Webhooks pages; events and deliveries kept 30 days.
 */
export const webhooks: Capability = {
  name: 'webhooks',
  services,
  routes: keyedRoutes('/v1', eventRoutes, webhookRoutes),
  portal: webhookPages,
  events: {
    [TEST_EVENT_TYPE]: WebhookTestData,
    'webhook_endpoint.disabled': WebhookEndpoint,
  },
  deliveryHeaders: DELIVERY_HEADERS,
  notices: disabledNotices,
  components: [
    Event,
    EventPage,
    EventType,
    WebhookEndpoint,
    WebhookEndpointWithSecret,
    WebhookEndpointList,
    NewWebhook,
    WebhookPatch,
    WebhookDelivery,
    DeliveryPage,
    RecoverRequest,
    Recovery,
  ],
  chores: {
    'webhook deliveries': (tx, now, limit) => deleteOldDeliveries(tx, before(now), limit),
    events: (tx, now, limit) => deleteOldEvents(tx, before(now), limit),
  },
};
