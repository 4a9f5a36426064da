import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Passwords } from '../domain/passwords.js';
import type { Log } from '../log.js';
import type { Tracing } from '../ops/tracing.js';

/** What every plugin of the app is given: nothing here is opened, so nothing here is closed. */
export interface Basics {
  config: Config;
  clock: Clock;
  /** The service's logger (`app.log` is a no-op above info: see src/app.ts). */
  log: Log;
  /** Traces (src/ops/tracing.ts): `NO_TRACING` when off. */
  tracing: Tracing;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Hashes and checks passwords (src/domain/passwords.ts): the API's Basic, the portal. */
    passwords: Passwords;
  }
}
