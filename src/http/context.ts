import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { AnnounceKeysChanged } from '../domain/accounts.js';
import type { KeyAuthenticator } from '../domain/api-keys.js';
import type { Passwords } from '../domain/passwords.js';
import type { RateLimiter } from '../limits/rate-limiter.js';
import type { Log } from '../log.js';
import type { Housekeeping } from '../ops/housekeeping.js';
import type { Lifecycle } from '../ops/lifecycle.js';
import type { Metrics } from '../ops/metrics.js';
import type { Outages } from '../ops/outages.js';
import type { Database } from '../store/database.js';
import type { Freshness } from './freshness.js';
import type { IdempotentAnswers } from './idempotency.js';
import type { PageCache } from './page-cache.js';
import type { SignInThrottle } from './sign-in-throttle.js';

/** What routes need from the app, reached as `app.ctx`: put together by the context plugin
 * (src/plugins/context.ts) from what the plugins before it provide. */
export interface AppContext {
  config: Config;
  /** The service's logger; a request's own is `request.log` (its id bound). */
  log: Log;
  database: Database;
  clock: Clock;
  keys: KeyAuthenticator;
  /** Hashes and checks passwords, at the configured cost. */
  passwords: Passwords;
  limiter: RateLimiter;
  metrics: Metrics;
  /** Which dependencies are away: their outages are logged once, not per request. */
  outages: Outages;
  /** Answered list pages, kept while the version of the data they were read from stands. */
  pages: PageCache;
  /** The versions cached answers are checked against. */
  freshness: Freshness;
  /** Announces a change to an account's keys or plan to every instance (a failure is logged). */
  keysChanged: AnnounceKeysChanged;
  /** Answers POSTs once per `Idempotency-Key`. */
  idempotency: IdempotentAnswers;
  /** Password attempts, counted before the hash: the API's HTTP Basic and the portal's forms. */
  signIn: SignInThrottle;
  /** Deletes what has run out (kept answers); runs beside the worker. */
  housekeeping: Housekeeping;
  /** Starting (API requests 503 until the dependencies answer), serving, or draining. */
  lifecycle: Lifecycle;
}

declare module 'fastify' {
  interface FastifyInstance {
    ctx: AppContext;
  }
}
