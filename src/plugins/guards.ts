import type { onRequestHookHandler } from 'fastify';
import fp from 'fastify-plugin';
import type { Scope } from '../domain/scopes.js';
import { bearerAuth, countApiCaller } from '../http/auth.js';
import { BrowserAccess } from '../http/browser-access.js';
import { RateLimitGuard } from '../http/rate-limit.js';
import { routePipeline, type SendStage } from '../http/route-pipeline.js';
import { SignInThrottle } from '../http/sign-in-throttle.js';
import type { Basics } from './basics.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Counts each request against its caller's limits, refusing past them. */
    rateLimitGuard: RateLimitGuard;
    /** Password attempts, counted before the hash: the API's HTTP Basic and the portal's forms. */
    signIn: SignInThrottle;
    /** The onRequest hook of an operation behind a bearer key holding `needed`: reads the key,
     * counts the call, checks the scope (`behindBearerKeys` puts it on each route). */
    bearer(needed: Scope): onRequestHookHandler;
    /** What the capabilities add to each route's answer (the request log's capture), in the
     * route pipeline's order (src/http/route-pipeline.ts). */
    sendStages: SendStage[];
    /** The paths publishable keys may read, and the preflights for them. */
    browserAccess: BrowserAccess;
    /** Counts the caller of a request no route matched (404, 405, an unreadable URL). */
    countCaller(
      request: FastifyRequest,
      reply: FastifyReply,
      done: (refusal?: Error) => void,
    ): void;
  }
}

/** What stands between a caller and the work: its limits and the password throttle. */
export const guardsPlugin = fp<Basics>(
  async (app, { config, clock, log }) => {
    const { limiter, outages, metrics, keys, freshness } = app;
    const { onStoreError } = config.rateLimit;
    const guard = new RateLimitGuard(limiter, onStoreError, outages, metrics, log);
    app.decorate('rateLimitGuard', guard);
    app.decorate(
      'signIn',
      new SignInThrottle(limiter, clock, onStoreError, outages, config.webhooks.secretKeys),
    );
    const bearer = bearerAuth(keys, guard, freshness);
    const sendStages: SendStage[] = [];
    app.decorate('bearer', bearer);
    app.decorate('sendStages', sendStages);
    // Before any route: each route's own hooks, from its declaration, in one order.
    app.addHook('onRoute', routePipeline(bearer, freshness, sendStages));
    app.decorate('countCaller', countApiCaller(keys, guard, freshness));
    const browserAccess = new BrowserAccess(app.database.reader);
    app.decorate('browserAccess', browserAccess);
    app.addHook('onRoute', browserAccess.noteRoute);
  },
  { name: 'guards', dependencies: ['store', 'limits', 'ops', 'caches'] },
);
