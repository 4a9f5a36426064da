import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Database } from '../store/database.js';
import { BullMqQueue } from './bullmq-queue.js';
import { MessageProcessor } from './processor.js';
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
): Promise<MessageQueue> {
  const processor = new MessageProcessor(database, clock, sink, config.messages, log);
  const { concurrency } = config.messages;
  if (!config.redisUrl) return new TableQueue(processor, concurrency, log);
  return BullMqQueue.create({
    redisUrl: config.redisUrl,
    prefix: `${config.redisKeyPrefix}bull`,
    processor,
    database,
    clock,
    concurrency,
    log,
  });
}
