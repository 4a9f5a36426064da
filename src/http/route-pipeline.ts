import type { onRequestHookHandler, onSendHookHandler, RouteOptions } from 'fastify';
import type { Scope } from '../domain/scopes.js';
import { announcerFor, type Freshness } from './freshness.js';
import { declaredScope } from './scopes.js';
import { noStoreFor } from './security-headers.js';

/** What a capability adds to each route's answer: its onSend hook for the route, or none. */
export type SendStage = (route: RouteOptions) => onSendHookHandler | undefined;

/**
 * Each route's own hooks, made from its declaration when it is declared, in one order, and
 * before the route's own (src/plugins/guards.ts registers it before any route):
 *
 * - onRequest: the guard of a key holding the scope its schema's security names (reads the key,
 *   counts the call, checks the scope: src/http/auth.ts); then `Cache-Control: no-store` where
 *   a success carries a secret (src/http/security-headers.ts);
 * - onSend: the announcement of its writes, where its `config.writes` declares them
 *   (src/http/freshness.ts); then each capability's stage, in the order they were added (the
 *   request log's capture, which so sees the answer as sent, announced).
 *
 * The app's and its scopes' hooks run before a route's own, as Fastify runs them: a scope that
 * stands behind HTTP Basic or counts its callers by address does so before these.
 */
export function routePipeline(
  guardFor: (needed: Scope) => onRequestHookHandler,
  freshness: Freshness,
  stages: readonly SendStage[],
): (route: RouteOptions) => void {
  return (route) => {
    const needed = declaredScope(route.schema);
    const onRequest = [needed === undefined ? undefined : guardFor(needed), noStoreFor(route)];
    const onSend = [announcerFor(freshness, route), ...stages.map((stage) => stage(route))];
    before(
      route,
      'onRequest',
      onRequest.filter((hook) => hook !== undefined),
    );
    before(
      route,
      'onSend',
      onSend.filter((hook) => hook !== undefined),
    );
  };
}

/** Puts `hooks` before the route's own of their kind (a hook, a list of them, or none). */
function before(
  route: RouteOptions,
  kind: 'onRequest' | 'onSend',
  hooks: Array<onRequestHookHandler | onSendHookHandler>,
): void {
  if (hooks.length === 0) return;
  (route as Record<typeof kind, unknown>)[kind] = [...hooks, ...[route[kind] ?? []].flat()];
}
