import fp from 'fastify-plugin';
import { Housekeeping } from '../ops/housekeeping.js';
import type { Basics } from './basics.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Deletes what has run out (kept answers); runs beside the worker. */
    housekeeping: Housekeeping;
  }
}

/** Housekeeping, started with the worker (WORKER=on) and stopped when the app closes. */
export const housekeepingPlugin = fp<Basics>(
  async (app, { config, clock, log }) => {
    const housekeeping = new Housekeeping(app.database, clock, log, app.outages);
    app.decorate('housekeeping', housekeeping);
    if (config.worker) app.lifecycle.whenServing(() => housekeeping.start());
    app.addHook('onClose', async () => {
      await housekeeping.close();
    });
  },
  { name: 'housekeeping', dependencies: ['store', 'ops'] },
);
