import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import { SecretBox } from '../domain/secret-box.js';
import { endpointsWant, type WebhookRules } from '../domain/webhooks.js';
import { createMessageQueue } from '../queue/create.js';
import type { MessageQueue } from '../queue/queue.js';
import { LogSink, type MessageSink } from '../queue/sink.js';
import type { Database } from '../store/database.js';
import { WebhookDispatcher } from '../webhooks/dispatcher.js';
import { Housekeeping } from './housekeeping.js';
import type { Metrics } from './metrics.js';
import type { Outages } from './outages.js';

/** What an instance's work besides requests is built from. */
export interface WorkDeps {
  config: Config;
  database: Database;
  clock: Clock;
  log: FastifyBaseLogger;
  outages: Outages;
  /** Told each message's and delivery's outcome (the service's /metrics). */
  metrics?: Pick<Metrics, 'processed' | 'webhookDelivery'>;
}

/** The message queue and its worker (started with `startWorker`). Messages go to `sink`; by
 * default the log, for accounts no endpoint takes them for. */
export function createQueue(deps: WorkDeps, sink?: MessageSink): Promise<MessageQueue> {
  const { config, database, clock, log, outages, metrics } = deps;
  return createMessageQueue(
    config,
    database,
    clock,
    sink ??
      new LogSink(log, (accountId) => endpointsWant(database.reader, accountId, 'message.sent')),
    log,
    outages,
    metrics && ((outcome) => metrics.processed(outcome.status)),
  );
}

/** What webhook endpoints are made under, and the dispatcher that sends their deliveries. */
export function createWebhooks(deps: WorkDeps): {
  rules: WebhookRules;
  dispatcher: WebhookDispatcher;
} {
  const { config, database, clock, log, outages, metrics } = deps;
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
    metrics && ((outcome) => metrics.webhookDelivery(outcome)),
  );
  return { rules: { database, clock, box, policy }, dispatcher };
}

/**
 * An instance's work besides requests, for `animal-store worker`: the message queue (and its
 * worker), the webhook dispatcher and housekeeping. The service builds the same parts, each in
 * its plugin (src/plugins/).
 */
export interface Background {
  readonly queue: MessageQueue;
  start(): void;
  /** The worker finishes (or, on BullMQ, releases) the messages in hand, then the rest stops. */
  close(): Promise<void>;
}

export async function createBackground(deps: WorkDeps): Promise<Background> {
  const queue = await createQueue(deps);
  const { dispatcher } = createWebhooks(deps);
  const housekeeping = new Housekeeping(deps.database, deps.clock, deps.log, deps.outages);
  return {
    queue,
    start: () => {
      queue.startWorker();
      housekeeping.start();
      dispatcher.start();
    },
    close: async () => {
      await queue.close();
      await dispatcher.close();
      await housekeeping.close();
    },
  };
}
