import { randomUUID } from 'node:crypto';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance } from 'fastify';
import { type Clock, systemClock } from './clock.js';
import type { Config } from './config.js';
import { KeyAuthenticator } from './domain/api-keys.js';
import { anonymous, basicAuth, bearerAuth } from './http/auth.js';
import type { AppContext } from './http/context.js';
import { registerErrorHandling, sendError, toApiError } from './http/error-handler.js';
import { registerOpenApi } from './http/openapi.js';
import { RateLimitGuard } from './http/rate-limit.js';
import { accountRoutes, signUpRoutes } from './http/routes/accounts.js';
import { categoryRoutes } from './http/routes/categories.js';
import { keyRoutes } from './http/routes/keys.js';
import { messageRoutes } from './http/routes/messages.js';
import { petRoutes } from './http/routes/pets.js';
import { storeRoutes } from './http/routes/store.js';
import { validatorCompiler } from './http/validation.js';
import { MemoryCounterStore } from './limits/memory-store.js';
import { RateLimiter } from './limits/rate-limiter.js';
import { RedisCounterStore } from './limits/redis-store.js';
import { createMessageQueue } from './queue/create.js';
import { LogSink, type MessageSink } from './queue/sink.js';
import type { Database } from './store/database.js';

export interface AppOptions {
  config: Config;
  database: Database;
  clock?: Clock;
  /** Where JSON log lines go (default stdout); tests read them. */
  logStream?: { write(line: string): void };
  /** Where the worker delivers messages (default: the log). */
  sink?: MessageSink;
}

/** The whole service as a Fastify instance that never listens: src/server.ts does that. */
export async function buildApp({
  config,
  database,
  clock = systemClock,
  logStream,
  sink,
}: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger: {
      level: config.logLevel,
      ...(logStream && { stream: logStream }),
      // Credentials never reach the log, whatever a serializer or a plugin adds.
      redact: {
        paths: ['req.headers.authorization', 'req.headers.cookie', 'res.headers["set-cookie"]'],
        censor: '[redacted]',
      },
    },
    trustProxy: config.trustProxy,
    bodyLimit: config.bodyLimit,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.-]{1,128}$/.test(given) ? given : randomUUID();
    },
    requestIdHeader: false,
    routerOptions: { maxParamLength: 200 },
    // Errors Fastify meets before a route is chosen (bad URL encoding…) get our Error body too.
    frameworkErrors: (err, _request, reply) => sendError(reply, toApiError(err)),
  }).withTypeProvider<TypeBoxTypeProvider>();

  const limiter = new RateLimiter(
    config.redisUrl ? await RedisCounterStore.connect(config.redisUrl) : new MemoryCounterStore(),
    clock,
    { ...config.rateLimit, keyPrefix: `${config.redisKeyPrefix}rl:` },
  );
  app.addHook('onClose', () => limiter.close());
  const limits = new RateLimitGuard(limiter, config.rateLimit.onStoreError);
  const queue = await createMessageQueue(
    config,
    database,
    clock,
    sink ?? new LogSink(app.log),
    app.log,
  );
  // Requests are finished before onClose hooks run; then the worker stops taking messages
  // and finishes (or, on BullMQ, releases) the ones in hand.
  app.addHook('onClose', () => queue.close());
  if (config.worker) app.addHook('onReady', async () => queue.startWorker());
  const context: AppContext = {
    config,
    database,
    clock,
    keys: new KeyAuthenticator(database.db, clock, config.env),
    limiter,
    queue,
  };
  app.decorate('ctx', context);
  app.decorateRequest('caller', null);
  app.decorateRequest('rateLimit', null);
  app.setValidatorCompiler(validatorCompiler);
  // Only JSON bodies are accepted; anything else is refused as an unsupported content type.
  // An empty JSON body (some clients send the header on every request) counts as no body.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser(['text/plain', 'application/json']);
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) =>
    body.length === 0 ? done(null, undefined) : parseJson(request, String(body), done),
  );
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  registerErrorHandling(app);
  await registerOpenApi(app, config);

  await app.register(
    async (v1) => {
      await v1.register(async (scope) => {
        scope.addHook('onRequest', anonymous(limits));
        await scope.register(signUpRoutes);
      });
      await v1.register(async (scope) => {
        scope.addHook('onRequest', basicAuth(database.db, limits));
        // A key may be created without a body: `{}` is implied.
        scope.addHook('preValidation', async (request) => {
          if (request.body === undefined && request.method === 'POST') request.body = {};
        });
        await scope.register(keyRoutes);
      });
      await v1.register(async (scope) => {
        scope.addHook('onRequest', bearerAuth(context.keys, limits));
        await scope.register(accountRoutes);
        await scope.register(petRoutes);
        await scope.register(categoryRoutes);
        await scope.register(storeRoutes);
      });
    },
    { prefix: '/v1' },
  );
  await app.register(async (scope) => {
    scope.addHook('onRequest', bearerAuth(context.keys, limits));
    await scope.register(messageRoutes);
  });

  app.get('/', { schema: { hide: true } }, (_request, reply) => reply.redirect('/docs/'));

  return app;
}
