import type { IncomingMessage, ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import cookie from '@fastify/cookie';
import csrf from '@fastify/csrf-protection';
import formBody from '@fastify/formbody';
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import helmet, { type HelmetOptions } from 'helmet';
import { ApiError } from '../errors.js';
import { logFailure, toApiError } from '../http/error-handler.js';
import type { SignInThrottle } from '../http/sign-in-throttle.js';
import { REVALIDATE, staticFolder } from '../http/static-assets.js';
import { pageContext, sendHtml } from './render.js';
import { type AccountNotices, accountPages } from './routes/account.js';
import { authPages } from './routes/auth.js';
import { keyPages } from './routes/keys.js';
import { PortalSessions, portalCookie } from './session.js';
import { errorPage } from './views/error.js';

declare module 'fastify' {
  interface FastifyInstance {
    portal: { sessions: PortalSessions; throttle: SignInThrottle };
  }
}

// public/portal, from src/portal (tsx) and from dist/portal (the build) alike.
const ASSETS = fileURLToPath(new URL('../../public/portal/', import.meta.url));

/**
 * The developer portal, registered under /portal: server-rendered pages to sign up, sign in,
 * manage API keys and see the account's usage. Cookies, forms, CSRF and the security headers
 * are scoped to it; the API never reads a cookie.
 */
export async function portalPlugin(
  app: FastifyInstance,
  /** The capabilities' pages, registered with the portal's own, and what each tells the
   * account page. */
  { pages, notices }: { pages: readonly FastifyPluginAsync[]; notices: readonly AccountNotices[] },
): Promise<void> {
  const { config, database, clock, passwords } = app.ctx;
  const development = config.env === 'development';
  const sessions = new PortalSessions(database, clock, config, passwords);
  app.decorate('portal', {
    sessions,
    // The API's HTTP Basic counts with the same throttle.
    throttle: app.ctx.signIn,
  });
  app.decorateRequest('portalAccount', null);
  // Pages, not API operations: none of them belongs in the OpenAPI document.
  app.addHook('onRoute', (route) => {
    route.schema = { ...route.schema, hide: true };
  });

  await app.register(cookie, { secret: config.sessionSecrets });
  await app.register(formBody, { bodyLimit: 16 * 1024 });
  await app.register(csrf, {
    cookieKey: 'as_csrf',
    cookieOpts: portalCookie(config),
    getUserInfo: (request) => sessions.csrfBinding(request),
    csrfOpts: { hmacKey: config.sessionSecrets[0] ?? '' },
  });
  const securityHeaders = helmetHeaders({
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'self'"],
        baseUri: ["'none'"],
        connectSrc: ["'self'"],
        fontSrc: ["'self'"],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
        imgSrc: ["'self'", 'data:'],
        objectSrc: ["'none'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        // Development runs on plain http://localhost, which an upgrade would break.
        ...(development ? {} : { upgradeInsecureRequests: [] }),
      },
    },
    // No HSTS pin on a developer's localhost; everywhere else the portal is HTTPS-only.
    strictTransportSecurity: development ? false : { maxAge: 31_536_000 },
    referrerPolicy: { policy: 'same-origin' },
    frameguard: { action: 'deny' },
  });
  app.addHook('onRequest', (_request, reply, done) => {
    reply.headers(securityHeaders);
    done();
  });
  // From memory, compressed and with an ETag (docs/decisions/0076-static-assets.md); under the
  // names the layout gives them, so asked for again on each page and answered 304 until changed.
  for (const [name, file] of staticFolder(ASSETS)) {
    app.get(`/assets/${name}`, (request, reply) => file.send(request, reply, REVALIDATE));
  }

  const renderError = async (request: FastifyRequest, reply: FastifyReply, error: ApiError) => {
    // A refusal past the limits is answered at the least cost: no form (so no CSRF token) and
    // no lookup of who is signed in beyond what the page had found.
    if (error.status === 429) {
      const context = { account: request.portalAccount ?? undefined, csrf: '' };
      return sendHtml(reply, errorPage(context, error), error.status);
    }
    // The navigation shows who is signed in; a failed lookup must not hide the error itself.
    request.portalAccount ??= (await sessions.account(request).catch(() => undefined)) ?? null;
    return sendHtml(reply, errorPage(pageContext(request, reply), error), error.status);
  };
  app.setErrorHandler(async (err, request, reply) => {
    const error = toApiError(err);
    logFailure(request, err, error);
    if (error.headers) reply.headers(error.headers);
    return renderError(request, reply, error);
  });
  app.setNotFoundHandler((request, reply) =>
    renderError(request, reply, new ApiError('not_found', 'There is no portal page here.')),
  );

  app.get('/', async (request, reply) =>
    reply.redirect((await sessions.account(request)) ? '/portal/account' : '/portal/sign-in'),
  );
  await app.register(authPages);
  await app.register(keyPages);
  for (const pagesOf of pages) await app.register(pagesOf);
  await app.register(accountPages, { notices });
}

/**
 * The headers helmet sets with these options, worked out once: they are the same for every page
 * (@fastify/helmet built helmet's middleware again for every request, a tenth of a refused
 * page's cost).
 */
function helmetHeaders(options: HelmetOptions): Record<string, string> {
  const headers: Record<string, string> = {};
  const response = {
    setHeader: (name: string, value: unknown) => {
      headers[name.toLowerCase()] = String(value);
    },
    removeHeader: () => {},
  };
  helmet(options)({} as IncomingMessage, response as unknown as ServerResponse, () => {});
  return headers;
}
