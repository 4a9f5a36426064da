import type { FastifyInstance, FastifyReply, onRequestHookHandler, RouteOptions } from 'fastify';
import type { Config } from '../config.js';
import { runFirst } from './route-hooks.js';

/**
 * The schema keyword that marks an answer as carrying a secret (a new API key, a webhook
 * signing secret): every route answering with such a schema is answered with
 * `Cache-Control: no-store`, so no browser, proxy or CDN keeps a copy. It is an OpenAPI
 * extension, so the document says it too.
 */
export const CARRIES_SECRET = 'x-carries-secret';

/** A year, subdomains too: what Helmet sends for the portal, so every answer says the same. */
const HSTS = 'max-age=31536000; includeSubDomains';

/**
 * Headers for every answer, whatever it is (errors included): `nosniff`, so no browser reads
 * a JSON answer as a script or a page; and in production, where the service is reached over
 * HTTPS only, HSTS. Set by the hook every request meets (src/plugins/requests.ts), before
 * anything can fail.
 */
export function everyAnswer(config: Config): (reply: FastifyReply) => void {
  if (config.env === 'production') {
    return (reply) => {
      reply.header('x-content-type-options', 'nosniff');
      reply.header('strict-transport-security', HSTS);
    };
  }
  return (reply) => {
    reply.header('x-content-type-options', 'nosniff');
  };
}

const noStore: onRequestHookHandler = (_request, reply, done) => {
  reply.header('cache-control', 'no-store');
  done();
};

/** Whether any success a route answers is of a schema marked CARRIES_SECRET. */
function carriesSecret(route: RouteOptions): boolean {
  const responses = (route.schema?.response ?? {}) as Record<string, Record<string, unknown>>;
  return Object.entries(responses).some(
    ([status, schema]) => status.startsWith('2') && schema?.[CARRIES_SECRET] === true,
  );
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set from the route's response schemas (CARRIES_SECRET): its answers hold a secret, and
     * are kept for an Idempotency-Key only sealed (src/http/idempotency.ts). */
    carriesSecret?: boolean;
  }
}

/** Registers, for the routes defined after it, `Cache-Control: no-store` where they answer a
 * secret, and marks those routes' config `carriesSecret`. */
export function noStoreForSecrets(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    if (!carriesSecret(route)) return;
    route.config = { ...route.config, carriesSecret: true };
    runFirst(route, 'onRequest', noStore);
  });
}

/** For the docs page: it may not be framed (clickjacking). */
export const refuseFraming: onRequestHookHandler = (_request, reply, done) => {
  reply.header('x-frame-options', 'DENY');
  reply.header('content-security-policy', "frame-ancestors 'none'");
  done();
};
