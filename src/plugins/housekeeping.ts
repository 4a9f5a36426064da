import fp from 'fastify-plugin';
import { type Chore, CORE_CHORES, Housekeeping } from '../ops/housekeeping.js';
import type { Basics } from './basics.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Deletes what has run out (kept answers); runs beside the worker. */
    housekeeping: Housekeeping;
  }
}

export interface HousekeepingOptions extends Basics {
  /** The capabilities' chores, beside the core's. */
  chores: Readonly<Record<string, Chore>>;
}

/** Housekeeping, started with the worker (WORKER=on) and stopped when the app closes. */
export const housekeepingPlugin = fp<HousekeepingOptions>(
  async (app, { config, clock, log, chores }) => {
    const all = { ...CORE_CHORES, ...chores };
    const housekeeping = new Housekeeping(app.database, clock, log, app.outages, all);
    app.decorate('housekeeping', housekeeping);
    if (config.worker) app.lifecycle.whenServing(() => housekeeping.start());
    app.addHook('onClose', async () => {
      await housekeeping.close();
    });
  },
  { name: 'housekeeping', dependencies: ['store', 'ops'] },
);
