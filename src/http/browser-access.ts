import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { isPublishableScope, originOf } from '../domain/api-keys.js';
import { ApiError } from '../errors.js';
import { isPublishedOrigin } from '../store/api-keys-repository.js';
import type { ReadDb } from '../store/database.js';
import { declaredScope } from './scopes.js';

/**
 * Pages of other origins, served through publishable keys only
 * (docs/decisions/0087-publishable-keys.md). An answer to a publishable key's request from an
 * origin the key lists carries CORS headers, so that the page may read it; a browser's
 * preflight, which carries no key, is answered for the operations such a key may call and an
 * origin some live publishable key lists. Nothing else answers a CORS header: a secret key's
 * answers never do, whatever the `Origin`.
 */

/** What a page may read of an answer besides its body and the safelisted headers. */
const EXPOSED_HEADERS = [
  'X-Request-Id',
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'RateLimit',
  'RateLimit-Policy',
  'Retry-After',
  'Link',
  'Deprecation',
  'Sunset',
].join(', ');

/** What a page may send with a catalogue read (the key, and a request id of its own). */
const ALLOWED_HEADERS = 'Authorization, X-Request-Id';

/** How long a browser may keep a preflight's answer (s); a revoked key is refused at once
 * anyway: its requests are, whatever a preflight said. */
const PREFLIGHT_MAX_AGE_SECONDS = 600;

/**
 * For a publishable key's request from an origin it lists: makes the answer readable by that
 * origin's page, whatever it is (a 429 too). Called once the key is read, before it is counted.
 */
export function openToPage(request: FastifyRequest, reply: FastifyReply): void {
  if (!fromListedOrigin(request)) return;
  reply
    .header('access-control-allow-origin', request.headers.origin as string)
    .header('access-control-expose-headers', EXPOSED_HEADERS)
    .header('vary', 'Origin');
}

/** Whether the request comes from a page the caller's publishable key lists (false for any
 * other caller). */
export function fromListedOrigin(request: FastifyRequest): boolean {
  const origin = request.headers.origin;
  return origin !== undefined && request.caller?.origins?.includes(origin) === true;
}

/**
 * For a publishable key: refuses the request unless its `Origin` is one the key lists (once it
 * was counted, as any refusal). A secret key, or a password, passes untouched.
 */
export function admitOrigin(request: FastifyRequest): void {
  const origins = request.caller?.origins;
  if (origins === null || origins === undefined || fromListedOrigin(request)) return;
  const origin = request.headers.origin;
  throw new ApiError(
    'origin_not_allowed',
    origin === undefined
      ? 'A publishable key is for web pages, and this request names no `Origin`: use a ' +
          'secret key on a server.'
      : `This publishable key is not for pages of ${JSON.stringify(origin.slice(0, 200))}: ` +
          'use it from one of the origins it lists, or make a key for this one.',
  );
}

/** The paths of the operations a publishable key may call, and the preflights for them. */
export class BrowserAccess {
  private readonly paths: RegExp[] = [];

  constructor(private readonly reader: ReadDb) {}

  /** An onRoute hook: notes a GET route a publishable key may call. */
  readonly noteRoute = (route: RouteOptions): void => {
    const methods = [route.method].flat();
    if (!methods.includes('GET') || !isPublishableScope(declaredScope(route.schema))) return;
    const pattern = route.url
      .split('/')
      // A parameter is read as the route reads it, undecoded: no `%` passes (`%2e%2e%2f`).
      .map((part) =>
        part.startsWith(':') ? '[^/%]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
      )
      .join('/');
    this.paths.push(new RegExp(`^${pattern}$`));
  };

  /**
   * A preflight's answer: 204 with CORS headers when it asks for GET or HEAD, at a path a
   * publishable key may read, from an origin some live publishable key lists; otherwise what
   * any OPTIONS request is answered (404 or 405, without CORS headers).
   */
  readonly preflight = async (request: FastifyRequest, reply: FastifyReply) => {
    const origin = request.headers.origin;
    const method = request.headers['access-control-request-method'];
    const path = request.url.split('?')[0] ?? '/';
    const allowed =
      origin !== undefined &&
      originOf(origin) === origin &&
      (method === 'GET' || method === 'HEAD') &&
      this.paths.some((served) => served.test(path)) &&
      (await isPublishedOrigin(this.reader, origin));
    if (!allowed) return reply.callNotFound();
    return reply
      .code(204)
      .header('access-control-allow-origin', origin)
      .header('access-control-allow-methods', 'GET, HEAD')
      .header('access-control-allow-headers', ALLOWED_HEADERS)
      .header('access-control-max-age', String(PREFLIGHT_MAX_AGE_SECONDS))
      .header('vary', 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers')
      .send();
  };
}
