import fp from 'fastify-plugin';
import { anonymous, basicAuth, bearerAuth, behindBearerKeys } from '../http/auth.js';
import { announceWrites } from '../http/freshness.js';
import { accountRoutes, signUpRoutes } from '../http/routes/accounts.js';
import { categoryRoutes } from '../http/routes/categories.js';
import { eventRoutes } from '../http/routes/events.js';
import { faviconRoutes } from '../http/routes/favicon.js';
import { keyRoutes } from '../http/routes/keys.js';
import { messageRoutes } from '../http/routes/messages.js';
import { opsRoutes } from '../http/routes/ops.js';
import { petRoutes } from '../http/routes/pets.js';
import { requestRoutes } from '../http/routes/requests.js';
import { storeRoutes } from '../http/routes/store.js';
import { webhookRoutes } from '../http/routes/webhooks.js';

/**
 * The API's routes, each scope behind its auth: /v1 (sign-up, keys with HTTP Basic, the
 * catalogue and the rest with a bearer key holding the scope each route names), the
 * quickstart's /messages, and the operators' routes (/healthz, /readyz, /metrics). Opens
 * nothing.
 */
export const apiPlugin = fp(
  async (app) => {
    const { database, keys, freshness, signIn, rateLimitGuard: limits } = app;
    const bearer = bearerAuth(keys, limits, freshness);
    await app.register(
      async (v1) => {
        await v1.register(async (scope) => {
          scope.addHook('onRequest', anonymous(limits));
          await scope.register(signUpRoutes);
        });
        await v1.register(async (scope) => {
          // Password attempts are counted before the hash, in the portal's counters.
          scope.addHook('onRequest', basicAuth(database.reader, app.passwords, limits, signIn));
          // A key may be created without a body: `{}` is implied.
          scope.addHook('preValidation', async (request) => {
            if (request.body === undefined && request.method === 'POST') request.body = {};
          });
          await scope.register(keyRoutes);
        });
        await v1.register(async (scope) => {
          behindBearerKeys(scope, bearer);
          // A write to the catalogue moves the account's data version on before it is answered
          // (in the shared mode, on every instance), so whoever reads next, anywhere, reads it.
          scope.addHook('onRoute', announceWrites(freshness));
          await scope.register(accountRoutes);
          await scope.register(petRoutes);
          await scope.register(categoryRoutes);
          await scope.register(storeRoutes);
        });
        // Events and webhooks change no catalogue data: no page is told of their writes.
        await v1.register(async (scope) => {
          behindBearerKeys(scope, bearer);
          await scope.register(eventRoutes);
          await scope.register(webhookRoutes);
          await scope.register(requestRoutes);
        });
      },
      { prefix: '/v1' },
    );
    await app.register(async (scope) => {
      behindBearerKeys(scope, bearer);
      await scope.register(messageRoutes);
    });
    await app.register(opsRoutes);
    await app.register(faviconRoutes);
  },
  { name: 'api', dependencies: ['store', 'caches', 'guards', 'context', 'requests', 'docs'] },
);
