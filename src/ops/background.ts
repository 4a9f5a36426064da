import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import { SecretBox } from '../domain/secret-box.js';
import { endpointsWant } from '../domain/webhooks.js';
import { createMessageQueue } from '../queue/create.js';
import type { MessageQueue } from '../queue/queue.js';
import { LogSink, type MessageSink } from '../queue/sink.js';
import type { Database } from '../store/database.js';
import { WebhookDispatcher } from '../webhooks/dispatcher.js';
import { Housekeeping } from './housekeeping.js';
import type { Metrics } from './metrics.js';
import type { Outages } from './outages.js';

/**
 * An instance's work besides requests: the message queue (and its worker), the webhook
 * dispatcher and housekeeping. Built the same way by the service (src/app.ts) and by
 * `animal-store worker`; `start` runs the work, which the service does only with WORKER=on.
 */
export interface Background {
  readonly queue: MessageQueue;
  readonly dispatcher: WebhookDispatcher;
  readonly housekeeping: Housekeeping;
  /** Seals and opens webhook signing secrets. */
  readonly box: SecretBox;
  /** Where webhooks may be sent. */
  readonly policy: { allowLoopback: boolean };
  start(): void;
  /** The worker finishes (or, on BullMQ, releases) the messages in hand, then the rest stops. */
  close(): Promise<void>;
}

export async function createBackground(options: {
  config: Config;
  database: Database;
  clock: Clock;
  log: FastifyBaseLogger;
  outages: Outages;
  /** Told each message's and delivery's outcome (the service's /metrics). */
  metrics?: Pick<Metrics, 'processed' | 'webhookDelivery'>;
  /** Where messages go; by default the log, for accounts no endpoint takes them for. */
  sink?: MessageSink;
}): Promise<Background> {
  const { config, database, clock, log, outages, metrics } = options;
  const queue = await createMessageQueue(
    config,
    database,
    clock,
    options.sink ??
      new LogSink(log, (accountId) => endpointsWant(database.reader, accountId, 'message.sent')),
    log,
    outages,
    metrics && ((outcome) => metrics.processed(outcome.status)),
  );
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
  const housekeeping = new Housekeeping(database, clock, log, outages);
  return {
    queue,
    dispatcher,
    housekeeping,
    box,
    policy,
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
