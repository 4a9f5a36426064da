import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import type { Capability } from '../capability.js';
import { secondsSince } from '../clock.js';
import { keyedRoutes } from '../http/auth.js';
import type { Basics } from '../plugins/basics.js';
import { anyEndpointWants } from '../webhooks/repository.js';
import { createMessageQueue } from './create-queue.js';
import type { MessageQueue } from './queue.js';
import { countUnsettled, oldestQueued } from './repository.js';
import { messageRoutes } from './routes.js';
import { MessageEventData, MessageRecord, NewMessage, QueuedMessage } from './schemas.js';
import { LogSink, type MessageSink } from './sink.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Messages accepted and delivered by a worker (src/messages/). */
    queue: MessageQueue;
  }
}

/**
 * The message queue, BullMQ on Redis or the table otherwise. Its worker starts once the
 * instance serves (WORKER=on); when the app closes it finishes (or, on BullMQ, releases) the
 * messages in hand. Messages go to `sink`; by default the log, for accounts no endpoint takes
 * them for (the settle's `message.sent` event is their delivery otherwise).
 */
const servicesWith = (sink?: MessageSink) =>
  fp<Basics>(
    async (app, { config, clock, log, tracing }) => {
      const { database, outages, metrics } = app;
      const queue = await createMessageQueue(
        config,
        database,
        clock,
        sink ??
          new LogSink(log, (accountId) =>
            anyEndpointWants(database.reader, accountId, 'message.sent'),
          ),
        log,
        outages,
        (outcome) => metrics.processed(outcome.status),
        tracing,
      );
      app.decorate('queue', queue);
      metrics.storeGauge(
        'messages_queue_depth',
        'Messages accepted and not yet settled (queued or processing).',
        () => countUnsettled(database.reader),
      );
      metrics.storeGauge(
        'messages_queue_oldest_seconds',
        'How long the longest-waiting queued message has waited past its time (0: none).',
        async () =>
          secondsSince(clock, await oldestQueued(database.reader, clock.now().toISOString())),
      );
      if (config.worker) app.lifecycle.whenServing(() => queue.startWorker());
      app.addHook('onClose', async () => {
        await queue.close();
      });
    },
    { name: 'queue', dependencies: ['store', 'ops'] },
  );

/**
 * The quickstart's messages (docs/decisions/0039-messages.md, 0040): `POST /messages` stores one
 * and a worker delivers it; `GET /messages/{id}` reads its record. Served without `/v1`.
 * `sink`: where the worker delivers them (a test's), instead of the log.
 */
export function messages(sink?: MessageSink): Capability {
  return {
    name: 'messages',
    services: servicesWith(sink),
    // At the root, not under /v1: the quickstart's path (src/messages/routes.ts). Under /v1
    // too, undocumented: a client generated from the document calls every operation at the
    // API's base, whatever server the document names for these (decision 0074).
    routes: async (app) => {
      await app.register(keyedRoutes('', messageRoutes));
      await app.register(keyedRoutes('/v1', undocumented(messageRoutes)));
    },
    components: [NewMessage, QueuedMessage, MessageRecord],
    events: {
      'message.sent': MessageEventData,
      'message.failed': MessageEventData,
      'message.deleted': MessageEventData,
    },
  };
}

/** `routes`, served but left out of the OpenAPI document (and so of Postman's collection). */
function undocumented(routes: FastifyPluginAsync): FastifyPluginAsync {
  return async (scope) => {
    scope.addHook('onRoute', (route) => {
      route.schema = { ...route.schema, hide: true };
    });
    await scope.register(routes);
  };
}
