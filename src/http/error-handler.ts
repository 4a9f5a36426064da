import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, type ErrorCode } from '../errors.js';
import { describeValidation } from './validation.js';

/** Fastify's own 4xx errors, in the words of our error table. */
const FRAMEWORK_CODES: Record<string, { code: ErrorCode; message?: string }> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: {
    code: 'unsupported_content_type',
    message: 'Send the body as JSON with `Content-Type: application/json`.',
  },
  FST_ERR_CTP_EMPTY_JSON_BODY: {
    code: 'invalid_json',
    message: 'The body is empty but the content type says JSON.',
  },
  FST_ERR_CTP_INVALID_JSON_BODY: { code: 'invalid_json', message: 'The body is not valid JSON.' },
  FST_CSRF_MISSING_SECRET: {
    code: 'csrf_failed',
    message: 'This form has expired or was not sent from our page; reload the page and try again.',
  },
  FST_CSRF_INVALID_TOKEN: {
    code: 'csrf_failed',
    message: 'This form has expired or was not sent from our page; reload the page and try again.',
  },
  FST_ERR_CTP_BODY_TOO_LARGE: {
    code: 'payload_too_large',
    message: 'The body is larger than the service accepts.',
  },
};

export function sendError(reply: FastifyReply, error: ApiError): FastifyReply {
  if (error.headers) reply.headers(error.headers);
  return reply
    .code(error.status)
    .type('application/json; charset=utf-8')
    .send({
      code: error.code,
      message: error.message,
      status: error.status,
      ...(error.details && { details: error.details }),
    });
}

/** Any thrown value as the ApiError the client should see. Internals never leak into a 5xx. */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  const e = err as Partial<FastifyError> & { validationContext?: string };
  if (e.validation) {
    const details = describeValidation(e.validation as never, e.validationContext);
    const first = details[0];
    const message = first ? `Invalid ${first.location}: ${first.message}.` : 'Invalid request.';
    return new ApiError('validation_failed', message, details);
  }
  const known = e.code ? FRAMEWORK_CODES[e.code] : undefined;
  if (known) return new ApiError(known.code, known.message ?? e.message ?? known.code);
  const status = e.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    return new ApiError('bad_request', e.message || 'The request could not be understood.');
  }
  return new ApiError('internal_error', 'Something went wrong on our side; it has been logged.');
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err, request: FastifyRequest, reply) => {
    const apiError = toApiError(err);
    if (apiError.status >= 500) request.log.error({ err }, 'request failed');
    return sendError(reply, apiError);
  });

  app.setNotFoundHandler((request, reply) =>
    sendError(
      reply,
      new ApiError(
        'route_not_found',
        `No operation at ${request.method} ${request.url.split('?')[0]?.slice(0, 200)}; see /docs.`,
      ),
    ),
  );
}
