import { readFileSync } from 'node:fs';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import { CAPABILITIES } from './capabilities.js';
import type { Capability } from './capability.js';
import { type Clock, systemClock } from './clock.js';
import type { Config } from './config.js';
import { Passwords } from './domain/passwords.js';
import { clientErrorHandler, MAX_HEADER_BYTES } from './http/client-errors.js';
import { requestIdOf } from './http/request-id.js';
import { createLog, requestLogger } from './log.js';
import { createTracing } from './ops/tracing.js';
import { apiPlugin } from './plugins/api.js';
import { cachesPlugin } from './plugins/caches.js';
import { contextPlugin } from './plugins/context.js';
import { docsPlugin } from './plugins/docs.js';
import { guardsPlugin } from './plugins/guards.js';
import { housekeepingPlugin } from './plugins/housekeeping.js';
import { limitsPlugin } from './plugins/limits.js';
import { opsPlugin } from './plugins/ops.js';
import { answerFrameworkError, requestsPlugin } from './plugins/requests.js';
import { storePlugin } from './plugins/store.js';
import { tracingPlugin } from './plugins/tracing.js';
import { portalPlugin } from './portal/plugin.js';
import type { Database } from './store/database.js';

const { version } = JSON.parse(
  readFileSync(new URL('../package.json', import.meta.url), 'utf8'),
) as { version: string };

/** Fastify's `trustProxy`; a hop count becomes the function Fastify itself would make of it
 * (its types omit the number form). */
function trustProxy(setting: Config['trustProxy']) {
  if (typeof setting !== 'number') return setting;
  return (_address: string, hop: number) => hop < setting;
}

export interface AppOptions {
  config: Config;
  /** A database the caller opened (migrated, unless `startLater`) and closes after the app.
   * Without one, the app opens it from `config` and closes it last (src/plugins/store.ts). */
  database?: Database;
  clock?: Clock;
  /** Hashes and checks passwords; by default at the configured cost (a test counts them). */
  passwords?: Passwords;
  /** Where JSON log lines go (default stdout); tests read them. */
  logStream?: { write(line: string): void };
  /**
   * The caller waits for the database and Redis, migrates, then calls `app.lifecycle.serve()`;
   * until then API requests answer 503 (src/server.ts, which listens first, so an instance may
   * start before its dependencies). Otherwise the database is given migrated, and the app
   * serves once it is ready and Redis answers.
   */
  startLater?: boolean;
  /** The capabilities put in (src/capabilities.ts): all of them but where a test says. */
  capabilities?: readonly Capability[];
}

/**
 * The whole service as a Fastify instance that never listens: src/server.ts does that. It is
 * plugins (src/plugins/), each decorating the app with what it provides and declaring what it
 * needs; each closes what it opened in its onClose, so they close in the reverse of the order
 * below: the requests in flight are answered, then the queue, the dispatcher and housekeeping
 * stop, the probes end, Redis closes, and the database last
 * (docs/decisions/0011-app-as-plugins.md).
 */
export async function buildApp({
  config,
  database,
  clock = systemClock,
  passwords = new Passwords(config.passwordHashCost),
  logStream,
  startLater = false,
  capabilities = CAPABILITIES,
}: AppOptions): Promise<FastifyInstance> {
  const tracing = createTracing(config.tracing, version);
  const log = createLog(config.logLevel, logStream, tracing.enabled);
  const app = Fastify({
    // At info and below, Fastify logs every request's arrival and end, with our logger. Above
    // (the default), where no such line is written, its logger would still cost every request
    // a child logger and two listeners on its response (src/log.ts): requests get ours instead,
    // made when they first write a line.
    ...(log.isLevelEnabled('info')
      ? { loggerInstance: log as FastifyBaseLogger }
      : { logger: false, childLoggerFactory: requestLogger(log) }),
    // One line per request, written when it is answered (src/plugins/requests.ts), not
    // Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    trustProxy: trustProxy(config.trustProxy),
    // A request that arrives on an open connection while the server closes is served, its answer
    // ending the connection (src/plugins/requests.ts), rather than given Fastify's own 503
    // body, which is not our Error: the stores stay open until every request is answered.
    return503OnClosing: false,
    bodyLimit: config.bodyLimit,
    // Explicit timeouts, so a client trickling its headers or body holds a connection for
    // seconds, not Node's minutes; checked every second rather than Node's every 30.
    requestTimeout: config.timeouts.requestMs,
    keepAliveTimeout: config.timeouts.keepAliveMs,
    http: {
      headersTimeout: config.timeouts.headersMs,
      connectionsCheckingInterval: 1_000,
      maxHeaderSize: MAX_HEADER_BYTES,
    },
    // What Node's parser refuses, and requests cut off by those timeouts, in our Error shape.
    clientErrorHandler,
    genReqId: (req) => requestIdOf(req.headers['x-request-id']),
    requestIdHeader: false,
    routerOptions: { maxParamLength: 200 },
    // Errors Fastify meets before a route is chosen (bad URL encoding…) get our Error body too.
    frameworkErrors: answerFrameworkError(config),
  }).withTypeProvider<TypeBoxTypeProvider>();

  const basics = { config, clock, log, tracing };
  app.decorate('passwords', passwords);
  try {
    await app.register(tracingPlugin, { tracing });
    await app.register(storePlugin, { ...basics, database });
    await app.register(limitsPlugin, basics);
    await app.register(opsPlugin, { ...basics, startLater });
    await app.register(cachesPlugin, basics);
    await app.register(guardsPlugin, basics);
    const chores = Object.assign({}, ...capabilities.map((c) => c.chores ?? {}));
    await app.register(housekeepingPlugin, { ...basics, chores });
    await app.register(contextPlugin, basics);
    // Before the routes and the 404s: their hooks see every answer.
    for (const { services } of capabilities) if (services) await app.register(services, basics);
    await app.register(requestsPlugin, basics);
    const parts = {
      components: capabilities.flatMap((c) => c.components ?? []),
      events: Object.assign({}, ...capabilities.map((c) => c.events ?? {})),
      deliveryHeaders: Object.assign({}, ...capabilities.map((c) => c.deliveryHeaders ?? {})),
    };
    await app.register(docsPlugin, { ...basics, parts });
    await app.register(apiPlugin);
    for (const { routes } of capabilities) if (routes) await app.register(routes);
    const pages = capabilities.flatMap((c) => (c.portal ? [c.portal] : []));
    const notices = capabilities.flatMap((c) => (c.notices ? [c.notices] : []));
    await app.register(portalPlugin, { prefix: '/portal', pages, notices });
  } catch (err) {
    // A plugin that fails to load leaves those before it open: they close, as on any close.
    await app.close();
    throw err;
  }

  // A person opening the service's address lands on the portal in development, on the docs
  // elsewhere (where the address is the API's, and people arrive from its documentation).
  const home = config.env === 'development' ? '/portal' : '/docs/';
  app.get('/', { schema: { hide: true } }, (_request, reply) => reply.redirect(home));

  return app;
}
