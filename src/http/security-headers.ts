import { createHash } from 'node:crypto';
import type { FastifyReply, onRequestHookHandler, onSendHookHandler, RouteOptions } from 'fastify';
import type { Config } from '../config.js';

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

/** `Cache-Control: no-store` for a route whose successes carry a secret (and its config marked
 * `carriesSecret`); none for the others. Made when the route is declared
 * (src/http/route-pipeline.ts). */
export function noStoreFor(route: RouteOptions): onRequestHookHandler | undefined {
  if (!carriesSecret(route)) return undefined;
  route.config = { ...route.config, carriesSecret: true };
  return noStore;
}

/** The origins "Test Request" on the docs page may send to: the document's servers. */
function serverOrigins(config: Config): string[] {
  const urls = [config.publicBaseUrl, config.stagingBaseUrl, config.messagesBaseUrl];
  // Development lists the local listener (src/http/openapi.ts), which a page opened by another
  // name (localhost) reaches as another origin.
  if (config.env === 'development') urls.push(`http://${config.host}:${config.port}`);
  // Not a URL (an IPv6 HOST written bare): the document's server is unusable as well.
  const origins = urls.flatMap((url) => URL.parse(url ?? '')?.origin ?? []);
  return [...new Set(origins)];
}

/** Every inline script of an HTML page (a `<script>` without `src`), as CSP hashes it. */
function inlineScriptHashes(page: string): string[] {
  const hashes: string[] = [];
  for (const [, attributes = '', body = ''] of page.matchAll(
    /<script\b([^>]*)>([\s\S]*?)<\/script>/gi,
  )) {
    if (/\bsrc\s*=/i.test(attributes)) continue;
    hashes.push(`'sha256-${createHash('sha256').update(body, 'utf8').digest('base64')}'`);
  }
  return hashes;
}

/**
 * The docs page's headers: no framing, and a policy naming the SHA-256 of each inline script of
 * the page as it is sent (docs/decisions/0005-security-headers.md,
 * 0068-fail-closed-and-private-files.md).
 */
export function docsPageHeaders(config: Config): {
  onRequest: onRequestHookHandler;
  onSend: onSendHookHandler;
} {
  const policy = (scripts: readonly string[]) =>
    [
      "default-src 'self'",
      `script-src ${["'self'", ...scripts].join(' ')}`,
      "style-src 'self' 'unsafe-inline'",
      "img-src 'self' data:",
      `connect-src ${["'self'", ...serverOrigins(config)].join(' ')}`,
      "object-src 'none'",
      "base-uri 'none'",
      "form-action 'self'",
      "frame-ancestors 'none'",
      // Development runs on plain http://localhost, which an upgrade would break.
      ...(config.env === 'development' ? [] : ['upgrade-insecure-requests']),
    ].join('; ');
  const withoutInline = policy([]);
  return {
    // Every answer of the scope, errors included.
    onRequest: (_request, reply, done) => {
      reply.header('x-frame-options', 'DENY');
      reply.header('content-security-policy', withoutInline);
      done();
    },
    // The page itself: its own inline scripts, by hash.
    onSend: (_request, reply, payload, done) => {
      const type = String(reply.getHeader('content-type') ?? '');
      if (typeof payload === 'string' && type.startsWith('text/html')) {
        reply.header('content-security-policy', policy(inlineScriptHashes(payload)));
      }
      done(null, payload);
    },
  };
}
