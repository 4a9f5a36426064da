import { randomUUID } from 'node:crypto';
import fp from 'fastify-plugin';
import type { Capability } from '../capability.js';
import { wallTimeOf } from '../clock.js';
import { keyedRoutes } from '../http/auth.js';
import type { Basics } from '../plugins/basics.js';
import { capture, captureStage } from './capture.js';
import { requestLogChores } from './chores.js';
import { requestPages } from './portal.js';
import { requestRoutes } from './routes.js';
import { RequestCounts, RequestLogEntry, RequestLogPage, RequestStats } from './schemas.js';
import { idempotencyKeyHash, RequestLog } from './writer.js';

declare module 'fastify' {
  interface FastifyInstance {
    requestLog: RequestLog;
  }
}

/**
 * The log as a service of the app (not encapsulated: its hooks see every request and every
 * route declared after it). Its `RequestLog` is `app.requestLog`; it is closed, its last
 * entries written, once every request begun has been answered and before the app's stores
 * close.
 */
const services = fp<Basics>(
  async (app, { config, clock, log }) => {
    const { database, metrics, outages, lifecycle } = app;
    const wallTime = wallTimeOf(clock);
    const requestLog = new RequestLog(database, outages, metrics, log, {
      maxBuffered: config.requestLog.buffer,
      // Within the shutdown's deadline: half of it goes to the requests being answered.
      closeWithinMs: config.shutdownTimeoutMs / 4,
      keyHash: idempotencyKeyHash(config.webhooks.secretKeys[0] ?? randomUUID()),
      now: () => wallTime(performance.now()),
    });
    app.decorate('requestLog', requestLog);
    app.decorateRequest('logged', false);
    // REQUEST_LOG=off: nothing is captured, and so nothing is written. A request's arrival is
    // stamped by the request path (src/plugins/requests.ts).
    if (config.requestLog.enabled) {
      app.sendStages.push(captureStage(requestLog, wallTime));
      // The answers of no route (404, 405) have the app's hooks only.
      const unmatched = capture(requestLog, wallTime, undefined);
      app.addHook('onSend', (request, reply, payload, done) => {
        if (request.is404) unmatched.call(app, request, reply, payload, done);
        else done();
      });
    }
    app.addHook('onClose', async () => {
      await lifecycle.answered();
      await requestLog.close();
    });
  },
  { name: 'request-log', dependencies: ['store', 'ops', 'guards'] },
);

/**
 * The request log (docs/decisions/0013-request-log.md, 0015, 0065): each account's API
 * requests, captured as they are answered and written in batches; read through
 * `/v1/requests…` and the portal's Requests pages; pruned by housekeeping.
 */
export const requestLog: Capability = {
  name: 'request log',
  services,
  routes: keyedRoutes('/v1', requestRoutes),
  portal: requestPages,
  components: [RequestLogEntry, RequestLogPage, RequestStats, RequestCounts],
  chores: requestLogChores,
};
