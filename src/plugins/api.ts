import fp from 'fastify-plugin';
import { anonymous, basicAuth, behindBearerKeys, preflights } from '../http/auth.js';
import { accountRoutes, signUpRoutes } from '../http/routes/accounts.js';
import { faviconRoutes } from '../http/routes/favicon.js';
import { keyRoutes } from '../http/routes/keys.js';
import { opsRoutes } from '../http/routes/ops.js';

/**
 * The core's routes, each scope behind its auth: /v1's sign-up, keys with HTTP Basic and the
 * account behind a bearer key holding the scope each route names, and the operators' routes
 * (/healthz, /readyz, /metrics). The capabilities add theirs (src/capability.ts). Opens
 * nothing.
 */
export const apiPlugin = fp(
  async (app) => {
    const { database, signIn, rateLimitGuard: limits } = app;
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
          behindBearerKeys(scope);
          await scope.register(accountRoutes);
        });
      },
      { prefix: '/v1' },
    );
    // A browser's preflight, answered for publishable keys' pages (src/http/browser-access.ts),
    // and otherwise as any OPTIONS request was; counted per address in a pool of its own.
    app.options(
      '/*',
      { schema: { hide: true }, onRequest: preflights(limits) },
      app.browserAccess.preflight,
    );
    await app.register(opsRoutes);
    await app.register(faviconRoutes);
  },
  { name: 'api', dependencies: ['store', 'caches', 'guards', 'context', 'requests', 'docs'] },
);
