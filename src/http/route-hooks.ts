import type { onRequestHookHandler, onSendHookHandler, RouteOptions } from 'fastify';

/**
 * Puts `hook` first among a route's own hooks of its kind, from an onRoute hook (as the route
 * is declared): it runs after the app's and its scopes' hooks of that kind and before the
 * route's others. A hook made for one route (its scope, its pattern) is added this way.
 */
export function runFirst(route: RouteOptions, kind: 'onRequest', hook: onRequestHookHandler): void;
export function runFirst(route: RouteOptions, kind: 'onSend', hook: onSendHookHandler): void;
export function runFirst(
  route: RouteOptions,
  kind: 'onRequest' | 'onSend',
  hook: onRequestHookHandler | onSendHookHandler,
): void {
  // The route's own are a hook, a list of them, or none.
  (route as Record<typeof kind, unknown>)[kind] = [hook, ...[route[kind] ?? []].flat()];
}
