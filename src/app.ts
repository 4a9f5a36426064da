import { isUtf8 } from 'node:buffer';
import { randomUUID } from 'node:crypto';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import { type Clock, systemClock, withTimeout } from './clock.js';
import { type Config, storeName } from './config.js';
import { KeyAuthenticator } from './domain/api-keys.js';
import { ApiError, RETRY_SOON } from './errors.js';
import { anonymous, basicAuth, bearerAuth, countApiCaller } from './http/auth.js';
import {
  clientErrorHandler,
  MAX_HEADER_BYTES,
  MAX_URL_BYTES,
  uriTooLong,
} from './http/client-errors.js';
import type { AppContext } from './http/context.js';
import { registerErrorHandling, sendError, toApiError } from './http/error-handler.js';
import {
  announceWrites,
  type Freshness,
  localFreshness,
  nothingKept,
  sharedFreshness,
} from './http/freshness.js';
import { IdempotentAnswers } from './http/idempotency.js';
import { registerOpenApi } from './http/openapi.js';
import { PageCache } from './http/page-cache.js';
import { RateLimitGuard } from './http/rate-limit.js';
import { requestLogPlugin } from './http/request-log.js';
import { accountRoutes, signUpRoutes } from './http/routes/accounts.js';
import { categoryRoutes } from './http/routes/categories.js';
import { eventRoutes } from './http/routes/events.js';
import { faviconRoutes } from './http/routes/favicon.js';
import { keyRoutes } from './http/routes/keys.js';
import { messageRoutes } from './http/routes/messages.js';
import { opsRoutes } from './http/routes/ops.js';
import { petRoutes } from './http/routes/pets.js';
import { requestRoutes } from './http/routes/requests.js';
import { storeRoutes } from './http/routes/store.js';
import { webhookRoutes } from './http/routes/webhooks.js';
import { everyAnswer, noStoreForSecrets } from './http/security-headers.js';
import { SignInThrottle } from './http/sign-in-throttle.js';
import { validatorCompiler } from './http/validation.js';
import { createRateLimiter } from './limits/create.js';
import type { RateLimiter } from './limits/rate-limiter.js';
import { createLog, logArrival, logRequest, requestLogger } from './log.js';
import { createBackground } from './ops/background.js';
import { Lifecycle, servedWhileStarting } from './ops/lifecycle.js';
import { Metrics } from './ops/metrics.js';
import { Outages } from './ops/outages.js';
import { databaseFailure } from './ops/startup-errors.js';
import { portalPlugin } from './portal/plugin.js';
import type { MessageSink } from './queue/sink.js';
import { type Database, ping } from './store/database.js';
import { countUnsettled } from './store/messages-repository.js';

const NOT_UTF8 = 'The body is not valid UTF-8, which JSON must be (RFC 8259 §8.1).';

const STARTING =
  'The service is starting: its database or Redis does not answer yet; retry shortly.';

/** How long a dependency may take to answer a probe during an outage. */
const PROBE_TIMEOUT_MS = 1_000;

/** A DNS name or IPv4 address, or a bracketed IPv6 address, then an optional port. */
const VALID_HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;

/** Fastify's `trustProxy`; a hop count becomes the function Fastify itself would make of it
 * (its types omit the number form). */
function trustProxy(setting: Config['trustProxy']) {
  if (typeof setting !== 'number') return setting;
  return (_address: string, hop: number) => hop < setting;
}

/** How cached answers are kept fresh: by the SQLite file, by the versions in Redis beside the
 * counters (PostgreSQL with Redis), or not at all (PostgreSQL alone). */
function freshnessFor(
  config: Config,
  database: Database,
  limiter: RateLimiter,
  outages: Outages,
  log: FastifyBaseLogger,
): Freshness {
  if (config.shared) return sharedFreshness(limiter, outages, log);
  const changesElsewhere = () => database.changesElsewhere();
  if (changesElsewhere() === undefined) return nothingKept;
  return localFreshness(() => changesElsewhere() ?? 0);
}

export interface AppOptions {
  config: Config;
  database: Database;
  clock?: Clock;
  /** Where JSON log lines go (default stdout); tests read them. */
  logStream?: { write(line: string): void };
  /** Where the worker delivers messages (default: the log). */
  sink?: MessageSink;
  /**
   * The caller waits for the database and Redis, migrates, then calls
   * `app.ctx.lifecycle.serve()`; until then API requests answer 503 (src/server.ts, which
   * listens first, so an instance may start before its dependencies). Otherwise the database
   * is given migrated, and the app waits for Redis when it becomes ready.
   */
  startLater?: boolean;
}

/** The whole service as a Fastify instance that never listens: src/server.ts does that. */
export async function buildApp({
  config,
  database,
  clock = systemClock,
  logStream,
  sink,
  startLater = false,
}: AppOptions): Promise<FastifyInstance> {
  const log = createLog(config.logLevel, logStream);
  const answerHeaders = everyAnswer(config);
  // Counts the caller of a request no route matches; set once the guards exist.
  let countCaller: ReturnType<typeof countApiCaller> = (_request, _reply, done) => done();
  const app = Fastify({
    // At info and below, Fastify logs every request's arrival and end, with our logger. Above
    // (the default), where no such line is written, its logger would still cost every request
    // a child logger and two listeners on its response (src/log.ts): requests get ours instead,
    // made when they first write a line.
    ...(log.isLevelEnabled('info')
      ? { loggerInstance: log as FastifyBaseLogger }
      : { logger: false, childLoggerFactory: requestLogger(log) }),
    // One line per request, written when it is answered (below), not Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    trustProxy: trustProxy(config.trustProxy),
    // A request that arrives on an open connection while the server closes is served, its answer
    // ending the connection (below), rather than given Fastify's own 503 body, which is not our
    // Error: the stores stay open until every request is answered.
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
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.-]{1,128}$/.test(given) ? given : randomUUID();
    },
    requestIdHeader: false,
    routerOptions: { maxParamLength: 200 },
    // Errors Fastify meets before a route is chosen (bad URL encoding…) get our Error body too,
    // and under the API the caller is counted first, as for a 404.
    frameworkErrors: (err, request, reply) => {
      reply.header('x-request-id', request.id);
      answerHeaders(reply);
      // No onRequest hook runs for these: counted here, as the hook counts the rest.
      lifecycle.began(reply.raw);
      countCaller(request, reply, (refusal) => sendError(reply, toApiError(refusal ?? err)));
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  const limiter = await createRateLimiter(config, clock, { waitForRedis: false });
  const exposed = config.metrics.mode !== 'off';
  const metrics = new Metrics(
    {
      queueDepth: () => countUnsettled(database.reader),
      pool: () => database.poolStats(),
      caches: () => [
        context.pages.cache,
        ...keys.caches,
        ...context.freshness.caches,
        ...database.caches,
      ],
    },
    exposed,
  );
  // What the requests and the worker find away is logged once an outage, and probed until back.
  const outages = new Outages(
    log,
    {
      database: {
        name: storeName(config.databaseUrl),
        probe: () => ping(database, PROBE_TIMEOUT_MS),
        setting: 'DATABASE_URL',
        permanent: (err) => databaseFailure(err, config.databaseUrl),
      },
      ...(config.redisUrl && {
        redis: {
          name: storeName(config.redisUrl),
          probe: () => withTimeout(limiter.store.ping(), PROBE_TIMEOUT_MS),
          optional: config.rateLimit.onStoreError === 'open',
          setting: 'REDIS_URL',
        },
      }),
    },
    metrics,
  );
  const limits = new RateLimitGuard(limiter, config.rateLimit.onStoreError, outages, metrics, log);
  const background = await createBackground({
    config,
    database,
    clock,
    log,
    outages,
    metrics,
    sink,
  });
  const { queue, dispatcher, housekeeping, box, policy } = background;
  const lifecycle = new Lifecycle(
    () => {
      if (config.worker) background.start();
    },
    // Half the shutdown deadline for requests being answered; the rest for what closes after.
    { answerWithinMs: config.shutdownTimeoutMs / 2, log },
  );
  // Closing, in order, in the one hook so nothing closes ahead of what uses it: the listener
  // is closed (Fastify, before onClose); the requests still being answered are answered, those
  // whose clients went away too; the worker stops taking messages and finishes (or, on
  // BullMQ, releases) the ones in hand; then the probes and Redis.
  app.addHook('onClose', async () => {
    await lifecycle.answered();
    await background.close();
    await outages.close();
    await limiter.close();
  });
  if (!startLater) {
    // The caller gave a migrated database; Redis is connected to in the background.
    app.addHook('onReady', async () => {
      if (await outages.untilAnswers('redis')) lifecycle.serve();
    });
  }
  const freshness = freshnessFor(config, database, limiter, outages, log);
  const keys = new KeyAuthenticator(database, clock, config.env, freshness);
  const context: AppContext = {
    config,
    log,
    database,
    clock,
    keys,
    limiter,
    queue,
    metrics,
    outages,
    pages: new PageCache(freshness.pagesKeptAtMostMs),
    freshness,
    keysChanged: (accountId) => freshness.keysChanged(accountId),
    idempotency: new IdempotentAnswers(database, clock, config.webhooks.secretKeys),
    signIn: new SignInThrottle(
      limiter,
      clock,
      config.rateLimit.onStoreError,
      outages,
      config.webhooks.secretKeys,
    ),
    webhooks: { database, clock, box, policy },
    dispatcher,
    housekeeping,
    lifecycle,
  };
  app.decorate('ctx', context);
  // Nearly every request names the same Host: the one last found valid is not checked again.
  let lastGoodHost = '';
  app.decorateRequest('caller', null);
  app.decorateRequest('rateLimit', null);
  app.setValidatorCompiler(validatorCompiler);
  // Only JSON bodies are accepted; anything else is refused as an unsupported content type.
  // An empty JSON body (some clients send the header on every request) counts as no body.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser(['text/plain', 'application/json']);
  // JSON is UTF-8 (RFC 8259 §8.1): a body that is not is refused, not stored with U+FFFD.
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const bytes = body as Buffer;
    if (bytes.length === 0) return done(null, undefined);
    if (!isUtf8(bytes)) return done(new ApiError('invalid_json', NOT_UTF8), undefined);
    parseJson(request, bytes.toString('utf8'), done);
  });
  if (log.isLevelEnabled('info')) app.addHook('onResponse', logRequest);
  // At debug, a line as each request arrives too (a request that never ends shows there).
  if (log.isLevelEnabled('debug')) app.addHook('onRequest', logArrival);
  // By route pattern, never the raw URL, so clients cannot multiply the series. Not counted
  // at all when nobody can read them (METRICS=off).
  if (exposed) {
    app.addHook('onResponse', (request, reply, done) => {
      const route = request.routeOptions.url ?? 'unmatched';
      metrics.request(request.method, route, reply.statusCode, reply.elapsedTime / 1000);
      done();
    });
  }

  // The hook every request meets takes a callback, not a promise (each async hook costs a
  // promise and a microtask per request), and sets the answer's headers up front rather than
  // in an onSend hook: headers set on the reply stay on whatever it answers, errors included.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    answerHeaders(reply);
    lifecycle.began(reply.raw);
    // Node's parser takes a line up to the size of all headers: the target's own limit is ours.
    if (request.url.length > MAX_URL_BYTES) {
      done(uriTooLong());
      return;
    }
    if (lifecycle.starting && !servedWhileStarting(request.url)) {
      done(new ApiError('service_unavailable', STARTING, undefined, RETRY_SOON));
      return;
    }
    // While shutting down, each answer ends its connection, so keep-alive clients reconnect to
    // another instance instead of holding this one open.
    if (context.lifecycle.draining) reply.header('connection', 'close');
    // Links and Location headers are built on the Host in development: a Host that is not a
    // host name is refused before anything is done, not met as a broken URL after a write.
    const host = request.host;
    if (host && host !== lastGoodHost) {
      if (!VALID_HOST.test(host)) {
        done(new ApiError('bad_request', 'The Host header is not a valid host[:port].'));
        return;
      }
      lastGoodHost = host;
    }
    // Each request goes on from the event loop's check phase: the requests read in one turn
    // are each taken this far, then answered back to back. Their answers leave together, so a
    // client is woken once for many, and the same code runs many times in a row: on the
    // benchmark's VM, GET went from ~10k to ~15k requests/s, with a third less CPU a request.
    // A request no route matches is counted here, before its body is read: whatever it is
    // answered (404, 405, a body refused), the answer carries the rate-limit headers.
    if (request.is404) setImmediate(() => countCaller(request, reply, done));
    else setImmediate(done);
  });
  countCaller = countApiCaller(context.keys, limits, context.freshness);
  await app.register(requestLogPlugin); // before the routes and the 404s: it sees every answer
  registerErrorHandling(app);
  noStoreForSecrets(app);
  await registerOpenApi(app, config);

  await app.register(
    async (v1) => {
      await v1.register(async (scope) => {
        scope.addHook('onRequest', anonymous(limits));
        await scope.register(signUpRoutes);
      });
      await v1.register(async (scope) => {
        // Password attempts are counted before the hash, in the portal's counters.
        scope.addHook('onRequest', basicAuth(database.reader, limits, context.signIn));
        // A key may be created without a body: `{}` is implied.
        scope.addHook('preValidation', async (request) => {
          if (request.body === undefined && request.method === 'POST') request.body = {};
        });
        await scope.register(keyRoutes);
      });
      await v1.register(async (scope) => {
        scope.addHook('onRequest', bearerAuth(context.keys, limits, context.freshness));
        // A write to the catalogue moves the account's data version on before it is answered
        // (in the shared mode, on every instance), so whoever reads next, anywhere, reads it.
        scope.addHook('onSend', announceWrites(context.freshness));
        await scope.register(accountRoutes);
        await scope.register(petRoutes);
        await scope.register(categoryRoutes);
        await scope.register(storeRoutes);
      });
      // Events and webhooks change no catalogue data: no page is told of their writes.
      await v1.register(async (scope) => {
        scope.addHook('onRequest', bearerAuth(context.keys, limits, context.freshness));
        await scope.register(eventRoutes);
        await scope.register(webhookRoutes);
        await scope.register(requestRoutes);
      });
    },
    { prefix: '/v1' },
  );
  await app.register(async (scope) => {
    scope.addHook('onRequest', bearerAuth(context.keys, limits, context.freshness));
    await scope.register(messageRoutes);
  });

  await app.register(opsRoutes);
  await app.register(faviconRoutes);
  await app.register(portalPlugin, { prefix: '/portal' });

  // A person opening the service's address lands on the portal in development, on the docs
  // elsewhere (where the address is the API's, and people arrive from its documentation).
  const home = config.env === 'development' ? '/portal' : '/docs/';
  app.get('/', { schema: { hide: true } }, (_request, reply) => reply.redirect(home));

  return app;
}
