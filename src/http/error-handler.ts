import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, type ErrorCode, errorBody, excerpt, RETRY_SOON } from '../errors.js';
import { brief } from '../ops/outages.js';
import { OutcomeUnknownError, type Refusal, WriteRefusedError } from '../store/group-commit.js';
import { type StoreTrouble, storeTrouble, valueRefused } from '../store/store-errors.js';
import { bodyCutOff, clientSocketError } from './client-errors.js';
import { describeValidation } from './validation.js';

const CSRF_FAILED = {
  code: 'csrf_failed',
  message: 'This form has expired or was not sent from our page; reload the page and try again.',
} as const;

/** Fastify's own 4xx errors, in the words of our error table. */
const FRAMEWORK_CODES: Record<string, { code: ErrorCode; message?: string }> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: {
    code: 'unsupported_content_type',
    message: 'Send the body as JSON with `Content-Type: application/json`.',
  },
  FST_ERR_CTP_EMPTY_JSON_BODY: {
    code: 'invalid_json',
    message: 'The body is empty, but its content type says JSON; send JSON, or no `Content-Type`.',
  },
  FST_ERR_CTP_INVALID_JSON_BODY: { code: 'invalid_json', message: 'The body is not valid JSON.' },
  FST_CSRF_MISSING_SECRET: CSRF_FAILED,
  FST_CSRF_INVALID_TOKEN: CSRF_FAILED,
  FST_ERR_CTP_BODY_TOO_LARGE: {
    code: 'payload_too_large',
    message: 'The body is larger than the service accepts.',
  },
  FST_ERR_BAD_URL: {
    code: 'bad_request',
    message:
      'The path is not valid: its percent-encoding does not decode to UTF-8. Send each ' +
      'character outside ASCII as its UTF-8 bytes, percent-encoded.',
  },
  FST_ERR_MAX_PARAM_LENGTH: {
    code: 'bad_request',
    message: 'A path segment is longer than any identifier we issue; use an id from our answers.',
  },
};

export function sendError(reply: FastifyReply, error: ApiError): FastifyReply {
  if (error.headers) reply.headers(error.headers);
  return reply
    .code(error.status)
    .type('application/json; charset=utf-8')
    .send(errorBody(error.code, error.message, error.details));
}

const TROUBLE_MESSAGES: Record<StoreTrouble, string> = {
  unreachable: 'The database cannot be reached at the moment; retry shortly.',
  busy: 'The database is too busy to answer in time; retry shortly.',
  failing: 'The database cannot store anything at the moment; nothing was changed, retry later.',
};

/** Writes refused before they began (src/store/group-commit.ts): nothing of them was done. */
const REFUSAL_MESSAGES: Record<Refusal, string> = {
  closing: 'The service is shutting down; nothing was changed, retry shortly.',
  failing: TROUBLE_MESSAGES.failing,
};

/** A write committed, or maybe, but not confirmed (docs/decisions/0003-outcome-unknown.md):
 * never "nothing was changed", since a retry without a key would then do it twice. */
const OUTCOME_UNKNOWN =
  'The change may have been stored, but the database could not confirm it. Send the request ' +
  'again with the same Idempotency-Key: if it was stored, its first answer is replayed and ' +
  'nothing is done twice. Or read the resource (GET) to see whether it was.';

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
  // The request's own connection broke while its body arrived: the client's doing, whatever
  // its code says (ECONNRESET, like a database's lost connection), and no outage of ours.
  if (clientSocketError(err)) return bodyCutOff();
  if (err instanceof OutcomeUnknownError) {
    return new ApiError('outcome_unknown', OUTCOME_UNKNOWN, undefined, RETRY_SOON);
  }
  if (err instanceof WriteRefusedError) {
    return new ApiError('service_unavailable', REFUSAL_MESSAGES[err.reason], undefined, RETRY_SOON);
  }
  const trouble = storeTrouble(err);
  if (trouble) {
    return new ApiError('service_unavailable', TROUBLE_MESSAGES[trouble], undefined, RETRY_SOON);
  }
  if (valueRefused(err)) {
    return new ApiError('bad_request', 'A value in the request cannot be stored or compared.');
  }
  const known = e.code ? FRAMEWORK_CODES[e.code] : undefined;
  if (known) return new ApiError(known.code, known.message ?? e.message ?? known.code);
  const status = e.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    return new ApiError(
      'bad_request',
      excerpt(e.message || 'The request could not be understood.'),
    );
  }
  return new ApiError('internal_error', 'Something went wrong on our side; it has been logged.');
}

/**
 * Logs a failed request as it deserves: a fault of ours (500) with its stack; the database
 * going away once for the outage (Outages), never per request; the database too busy as a
 * warning, and unable to store (disk full or failing) as an error, without a stack, as is a
 * write whose outcome is unknown (with its cause); a 503 we made on purpose (Redis away,
 * shutting down) not at all, its cause being logged where it was found.
 */
export function logFailure(request: FastifyRequest, err: unknown, apiError: ApiError): void {
  // Validation should have refused it: worth a look, though the client was answered.
  if (valueRefused(err)) request.log.warn({ error: brief(err) }, 'the database refused a value');
  if (apiError.status < 500) return;
  if (
    err instanceof OutcomeUnknownError ||
    (err instanceof WriteRefusedError && err.reason === 'failing')
  ) {
    // The cause (a failed sync, a lost connection) says what broke.
    request.log.error({ cause: brief(err.cause) }, err.message);
    return;
  }
  const trouble = storeTrouble(err);
  if (trouble === 'unreachable') request.server.ctx.outages.failed('database', err);
  else if (trouble === 'busy') request.log.warn({ error: brief(err) }, 'database too busy');
  else if (trouble === 'failing') {
    request.log.error({ error: brief(err) }, 'the database cannot store: disk full or failing');
  } else if (apiError.code !== 'service_unavailable') request.log.error({ err }, 'request failed');
}

/** How much of a refused body is read and thrown away, at most, before the connection is
 * closed instead. */
const DISCARD_BYTES = 16 * 1024 * 1024;
const DISCARD_MS = 5_000;

/**
 * A body refused before it was read (413) is still on its way: closing at once would reset a
 * client that is still sending, and many (Node's fetch among them) then report the reset, not
 * our answer. Instead the rest is read and thrown away, up to DISCARD_BYTES or DISCARD_MS (as
 * nginx's lingering close), and the connection is kept open: a client that finishes sending
 * reads the answer, and may send its next request on the same connection.
 */
function discardUnreadBody(request: FastifyRequest, reply: FastifyReply): void {
  const raw = request.raw;
  if (raw.complete || raw.destroyed) return;
  // Fastify asks to close after a body error; unless we are shutting down, we linger instead.
  if (!request.server.ctx.lifecycle.draining) reply.removeHeader('connection');
  const socket = raw.socket;
  let bytes = 0;
  const timer = setTimeout(() => socket.destroy(), DISCARD_MS);
  timer.unref();
  raw.on('data', (chunk: Buffer) => {
    bytes += chunk.length;
    if (bytes > DISCARD_BYTES) socket.destroy();
  });
  raw.once('end', () => clearTimeout(timer));
  raw.once('close', () => clearTimeout(timer));
  raw.resume();
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err, request: FastifyRequest, reply) => {
    const apiError = toApiError(err);
    logFailure(request, err, apiError);
    if (apiError.code === 'payload_too_large') discardUnreadBody(request, reply);
    return sendError(reply, apiError);
  });

  // An unknown path is 404; a known path asked with another method is 405 with `Allow`
  // (RFC 9110 §15.5.6). Under the API the caller was counted first (src/plugins/requests.ts),
  // so these answers carry the rate-limit headers like every other.
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '/';
    const allowed = METHODS.filter((method) => app.findRoute({ method, url: path }) !== null);
    if (allowed.length > 0) {
      reply.header('allow', allowed.join(', '));
      return sendError(
        reply,
        new ApiError(
          'method_not_allowed',
          `${excerpt(request.method)} is not served at ${excerpt(path)}; use ` +
            `${allowed.length > 1 ? 'one of ' : ''}${allowed.join(', ')}.`,
        ),
      );
    }
    return sendError(reply, new ApiError('route_not_found', notFoundMessage(app, path)));
  });
}

/**
 * What a 404 says: the path that would have been served, when the caller only added or left
 * out the API's prefix (`/pets` for `/v1/pets`, `/v1/healthz` for `/healthz`); else where the
 * paths are listed.
 */
function notFoundMessage(app: FastifyInstance, path: string): string {
  const served = (url: string) =>
    url !== '/' && METHODS.some((method) => app.findRoute({ method, url }) !== null);
  const unprefixed = path.startsWith(`${API_PREFIX}/`) ? path.slice(API_PREFIX.length) : undefined;
  const meant = unprefixed !== undefined ? unprefixed : `${API_PREFIX}${path === '/' ? '' : path}`;
  const said = `No operation at ${excerpt(path)}`;
  if (served(meant)) return `${said}; send it to ${excerpt(meant)} instead.`;
  return `${said}; see /docs for the paths served (the API's start with ${API_PREFIX}).`;
}

const API_PREFIX = '/v1';

/**
 * The methods an `Allow` header may list: those routes are declared with (HEAD with GET).
 * OPTIONS is left out: it answers browsers' preflights at any path (src/http/browser-access.ts),
 * and is no operation of a path.
 */
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
