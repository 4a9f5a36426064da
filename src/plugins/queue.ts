import fp from 'fastify-plugin';
import { createQueue } from '../ops/background.js';
import type { MessageQueue } from '../queue/queue.js';
import type { MessageSink } from '../queue/sink.js';
import type { Basics } from './basics.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Messages accepted and delivered by a worker (src/queue/). */
    queue: MessageQueue;
  }
}

export interface QueueOptions extends Basics {
  /** Where the worker delivers messages (default: the log). */
  sink?: MessageSink | undefined;
}

/**
 * The message queue. Its worker starts once the instance serves (WORKER=on); when the app
 * closes it finishes (or, on BullMQ, releases) the messages in hand.
 */
export const queuePlugin = fp<QueueOptions>(
  async (app, { config, clock, log, sink }) => {
    const { database, outages, metrics } = app;
    const queue = await createQueue({ config, database, clock, log, outages, metrics }, sink);
    app.decorate('queue', queue);
    if (config.worker) app.lifecycle.whenServing(() => queue.startWorker());
    app.addHook('onClose', async () => {
      await queue.close();
    });
  },
  { name: 'queue', dependencies: ['store', 'ops'] },
);
