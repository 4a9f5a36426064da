import type { FastifyRequest } from 'fastify';
import { allows, type Scope } from '../domain/scopes.js';
import { ApiError } from '../errors.js';

/**
 * An operation's security requirement: a bearer key holding `scope` (OpenAPI 3.1 names scopes
 * for any scheme). The scope check reads it from the route's schema, so what the document
 * says and what the service checks are one declaration (docs/decisions/0014-key-scopes.md).
 */
export function bearerScope(scope: Scope): [{ bearerAuth: [Scope] }] {
  return [{ bearerAuth: [scope] }];
}

/** The scope the route's schema names for a bearer key; undefined where it names none. */
export function scopeOf(request: FastifyRequest): Scope | undefined {
  const security = request.routeOptions.schema?.security as
    | ReadonlyArray<Record<string, readonly string[]>>
    | undefined;
  return security?.[0]?.bearerAuth?.[0] as Scope | undefined;
}

/**
 * Refuses a caller whose key does not hold the operation's scope: `403 insufficient_scope`,
 * with the challenge RFC 6750 §3.1 gives. Runs after the request was counted, like any call.
 */
export function requireScope(request: FastifyRequest): void {
  const needed = scopeOf(request);
  const caller = request.caller;
  if (needed === undefined || caller === null || allows(caller.scopes, needed)) return;
  throw new ApiError(
    'insufficient_scope',
    `This API key may not do this: it needs the scope ${needed}, and holds ` +
      `${caller.scopes?.length ? caller.scopes.join(', ') : 'none'}.`,
    undefined,
    {
      'www-authenticate': `Bearer realm="animal-store", error="insufficient_scope", scope="${needed}"`,
    },
  );
}
