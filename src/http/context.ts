import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { KeyAuthenticator } from '../domain/api-keys.js';
import type { RateLimiter } from '../limits/rate-limiter.js';
import type { MessageQueue } from '../queue/queue.js';
import type { Database } from '../store/database.js';

/** What routes need from the app: built once in buildApp, reached as `app.ctx`. */
export interface AppContext {
  config: Config;
  database: Database;
  clock: Clock;
  keys: KeyAuthenticator;
  limiter: RateLimiter;
  queue: MessageQueue;
}

declare module 'fastify' {
  interface FastifyInstance {
    ctx: AppContext;
  }
}
