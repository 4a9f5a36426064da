import type { onSendHookHandler } from 'fastify';
import { REPLAYED_HEADER } from '../http/idempotency.js';
import type { SendStage } from '../http/route-pipeline.js';
import { type KeptBody, keptBody } from './domain.js';
import type { RequestLog } from './writer.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Its entry was captured. */
    logged: boolean;
  }
  interface FastifyContextConfig {
    /** `false`: this route's requests are not logged (the log's own). */
    requestLog?: false;
  }
}

/** `/v1/pets/:petId` as the OpenAPI document writes it: `/v1/pets/{petId}`. */
function routePattern(route: string): string {
  return route.replace(/:(\w+)/g, '{$1}');
}

/** A body redacted and cut; null should it not be walkable (it came from JSON.parse). */
function safeKeptBody(body: unknown): KeptBody | null {
  try {
    return keptBody(body);
  } catch {
    return null;
  }
}

/**
 * The capture of a route's requests (or, `route` undefined, of those no route matched): each
 * request of a known account, as its answer is sent, is added to the log (an error's body
 * redacted and cut, its Error as sent; a success costs no serialization). An onSend hook of the
 * route's own, made when the route is declared (decisions 0013 and 0015 say why), and run after
 * the app's and its scope's hooks: no hook before it can still replace the answer it saw (a
 * failing hook's error is answered through them again). Should a request ever be captured
 * twice, its first entry stands.
 */
export function capture(
  requestLog: RequestLog,
  wallTime: (instant: number) => number,
  route: string | undefined,
): onSendHookHandler {
  return (request, reply, payload, done) => {
    const caller = request.caller;
    if (caller !== null && !request.logged) {
      request.logged = true;
      const status = reply.statusCode;
      const failed = status >= 400;
      // Stamped on arrival by the request path (src/plugins/requests.ts); a request no hook
      // ran for arrived now, as far as anything knows.
      const now = performance.now();
      const arrivedAt = request.arrivedAt > 0 ? request.arrivedAt : now;
      const idempotencyKey = request.headers['idempotency-key'];
      requestLog.add({
        accountId: caller.account.id,
        keyId: caller.keyId,
        id: request.id,
        method: request.method,
        route,
        url: request.url,
        status,
        durationMs: now - arrivedAt,
        // The arrival's own instant, not the answer's time less the duration: the clock counts
        // whole ms, so two requests less than a ms apart could swap.
        at: wallTime(arrivedAt),
        ip: request.ip,
        idempotencyKey,
        replayed: idempotencyKey !== undefined && reply.getHeader(REPLAYED_HEADER) === 'true',
        body: failed ? safeKeptBody(request.body) : null,
        // As sent: made what the log keeps (`keptErrorBody`) when its batch is encoded, so that a
        // refusal summarised with others costs nothing more.
        errorBody: failed && typeof payload === 'string' ? payload : null,
        traceId: request.traced?.span.spanContext().traceId ?? null,
      });
    }
    done();
  };
}

/** The capture of each route as a stage of the route pipeline (src/http/route-pipeline.ts):
 * after the core's hooks (a write's announcement) and before the route's own (HEAD's, which
 * empties the answer); none for the log's own routes. */
export function captureStage(
  requestLog: RequestLog,
  wallTime: (instant: number) => number,
): SendStage {
  return (route) =>
    route.config?.requestLog === false
      ? undefined
      : capture(requestLog, wallTime, routePattern(route.url));
}
