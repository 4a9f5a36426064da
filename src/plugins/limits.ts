import fp from 'fastify-plugin';
import { createRateLimiter } from '../limits/create.js';
import type { RateLimiter } from '../limits/rate-limiter.js';
import type { Basics } from './basics.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The rate limiter's counters: in this process, or in Redis (src/limits/). */
    limiter: RateLimiter;
  }
}

/**
 * The rate limiter, over Redis when REDIS_URL is set (connected to in the background: the
 * instance starts without it, answering 503 until it answers). Closed after the probes that
 * ping it (ops).
 */
export const limitsPlugin = fp<Basics>(
  async (app, { config, clock }) => {
    const limiter = await createRateLimiter(config, clock, { waitForRedis: false });
    app.decorate('limiter', limiter);
    app.addHook('onClose', async () => {
      await limiter.close();
    });
  },
  { name: 'limits' },
);
