import type { FastifyRequest, RouteOptions } from 'fastify';
import { allows, type Scope } from '../domain/scopes.js';
import { ApiError } from '../errors.js';

/**
 * An operation's security requirement: a bearer key holding `scope` (OpenAPI 3.1 names scopes
 * for any scheme). The scope check is made from the route's schema when the route is declared,
 * so what the document says and what the service checks are one declaration
 * (docs/decisions/0014-key-scopes.md).
 */
export function bearerScope(scope: Scope): [{ bearerAuth: [Scope] }] {
  return [{ bearerAuth: [scope] }];
}

/**
 * The scope a security requirement names for a bearer key, in a route's schema or in the
 * document's operation made from it; undefined where it names none.
 */
export function declaredScope(declared: { security?: unknown } | undefined): Scope | undefined {
  const security = declared?.security as
    | ReadonlyArray<Record<string, readonly string[]>>
    | undefined;
  return security?.[0]?.bearerAuth?.[0] as Scope | undefined;
}

/**
 * The scope a bearer route needs, read from its declaration once, as the route is declared. A
 * route behind a bearer key that names no scope is refused at start-up: it could not be
 * restricted, and the document could not say what it needs.
 */
export function neededScope(route: Pick<RouteOptions, 'method' | 'url' | 'schema'>): Scope {
  const needed = declaredScope(route.schema);
  if (needed === undefined) {
    throw new Error(
      `${String(route.method)} ${route.url} is behind a bearer key and names no scope: ` +
        'declare its operation with a `scope` (src/http/operation.ts)',
    );
  }
  return needed;
}

/**
 * The check of one operation's scope: refuses a caller whose key does not hold `needed` with
 * `403 insufficient_scope` and the challenge RFC 6750 §3.1 gives. Made once a route; runs
 * after the request was counted, like any call.
 */
export function scopeCheck(needed: Scope): (request: FastifyRequest) => void {
  const challenge: Readonly<Record<string, string>> = {
    'www-authenticate': `Bearer realm="animal-store", error="insufficient_scope", scope="${needed}"`,
  };
  return (request) => {
    const caller = request.caller;
    if (caller === null || allows(caller.scopes, needed)) return;
    if (caller.origins !== null) {
      throw new ApiError(
        'insufficient_scope',
        `A publishable key only reads the catalogue (${caller.scopes?.join(', ')}), and this ` +
          `needs ${needed}: use a secret key, on your server, for it.`,
        undefined,
        challenge,
      );
    }
    throw new ApiError(
      'insufficient_scope',
      `This API key may not do this: it needs the scope ${needed}, and holds ` +
        `${caller.scopes?.length ? caller.scopes.join(', ') : 'none'}.`,
      undefined,
      challenge,
    );
  };
}
