import type { FastifyReply } from 'fastify';
import type { Result } from '../domain/result.js';
import { ApiError, ERRORS, errorBody } from '../errors.js';

/** What a POST answers, as a value: kept for its idempotency key (src/http/idempotency.ts) and
 * sent, then sent again as it is. */
export interface Answer {
  status: number;
  body: unknown;
  location?: string | undefined;
}

/** 201 Created, with the new resource's address when it has one. */
export function created(body: unknown, location?: URL): Answer {
  return { status: 201, body, location: location?.href };
}

/** The answer of a service result: `ok` shapes a success; a failure is its Error body. */
export function answerOf<T>(result: Result<T>, ok: (value: T) => Answer): Answer {
  if (result.ok) return ok(result.value);
  return { status: ERRORS[result.code].status, body: errorBody(result.code, result.message) };
}

export function send(reply: FastifyReply, answer: Answer): FastifyReply {
  if (answer.location) reply.header('location', answer.location);
  return reply.code(answer.status).send(answer.body);
}

/** The value of a service result, or the Error body its failure stands for. */
export function unwrap<T>(result: Result<T>): T {
  if (!result.ok) throw new ApiError(result.code, result.message);
  return result.value;
}
