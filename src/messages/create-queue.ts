import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Outages } from '../ops/outages.js';
import type { Tracing } from '../ops/tracing.js';
import type { Database } from '../store/database.js';
import { MessageProcessor, type Outcome } from './processor.js';
import type { MessageQueue } from './queue.js';
import type { MessageSink } from './sink.js';
import { TableQueue } from './table-queue.js';

/** BullMQ when REDIS_URL is set, the database table otherwise. */
export async function createMessageQueue(
  config: Config,
  database: Database,
  clock: Clock,
  sink: MessageSink,
  log: FastifyBaseLogger,
  outages: Outages,
  observe?: (outcome: Outcome) => void,
  tracing?: Tracing,
): Promise<MessageQueue> {
  const processor = new MessageProcessor(
    database,
    clock,
    sink,
    config.messages,
    log,
    outages,
    observe,
    tracing,
  );
  const { concurrency } = config.messages;
  if (!config.redisUrl) return new TableQueue(processor, clock, concurrency, outages);
  // Loaded only when used: BullMQ adds ~20 MB to a process that does not need it.
  const { BullMqQueue } = await import('./bullmq-queue.js');
  return BullMqQueue.create({
    redisUrl: config.redisUrl,
    prefix: `${config.redisKeyPrefix}bull`,
    processor,
    database,
    clock,
    concurrency,
    log,
    outages,
  });
}
