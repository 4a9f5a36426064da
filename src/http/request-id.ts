import { randomUUID } from 'node:crypto';

/** A request id a client may choose: the request log finds its entry by it
 * (`/v1/requests/{id}`), so it is one that log searches well (src/request-log/). */
const CHOSEN_ID = /^[\w.-]{1,128}$/;

/**
 * A request's id (Fastify's `genReqId`, answered as `X-Request-Id`): the client's
 * `X-Request-Id` as sent when well formed, else a new UUID. `stats` is never taken:
 * `GET /v1/requests/stats` is the log's counts, so its entry could not be read.
 */
export function requestIdOf(given: string | string[] | undefined): string {
  return typeof given === 'string' && CHOSEN_ID.test(given) && given !== 'stats'
    ? given
    : randomUUID();
}
