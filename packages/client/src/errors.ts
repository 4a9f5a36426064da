/**
 * What a failed call throws: an `AnimalStoreError`, as the subclass of its kind, so callers
 * `catch` by kind and branch on `code` (stripe-node's error classes are the model). Every one
 * carries the answer's `X-Request-Id` as `requestId`, to quote to support.
 */
import type { ErrorCode } from './error-codes.js';
import { retryAfterSeconds } from './rate-limit.js';
import type { LastResponse } from './response.js';
import type { ErrorBody } from './types.js';

/** Codes of failures the client reports itself, without an answer of the service to go by. */
export type ClientErrorCode =
  /** No answer: the connection failed. */
  | 'connection_failed'
  /** No answer in time: an attempt's `timeoutMs`, or a call's. */
  | 'timeout'
  /** The call's signal was aborted. */
  | 'aborted'
  /** A next-page link pointed at another origin and was not followed. */
  | 'foreign_link'
  /** An error answer without the service's Error body (a proxy's, say): its status. */
  | `http_${number}`;

/**
 * The `code` of an `AnimalStoreError`: one the service documents (`ErrorCode`, generated from
 * its OpenAPI document) or one of the client's own. A service newer than this client may answer
 * a code it does not know yet: it comes through as sent, so keep a `default` branch.
 */
export type AnimalStoreErrorCode = ErrorCode | ClientErrorCode;

export interface AnimalStoreErrorFields {
  status: number;
  code: AnimalStoreErrorCode;
  message: string;
  requestId?: string | undefined;
  retryAfter?: number | undefined;
  details?: ErrorBody['details'];
  /** The answer, when one came. */
  lastResponse?: LastResponse | undefined;
  cause?: unknown;
}

/** What the client knew when the answer came, for a message that names the fix. */
export interface AnswerContext {
  /** The answer's metadata (its `lastResponse`). */
  lastResponse?: LastResponse | undefined;
  /** Whether the client was made with an `apiKey`. */
  apiKey?: boolean | undefined;
}

/**
 * Every failed call throws this, or rather one of its kinds: an error answer of the service
 * (`status` its HTTP status, `code`/`message` from the Error body), or, with `status` 0, a
 * request that got no answer (`ConnectionError`). Nothing else is thrown by a call.
 */
export class AnimalStoreError extends Error {
  override readonly name: string = 'AnimalStoreError';
  /** The HTTP status; 0 when no answer came. */
  readonly status: number;
  /** The machine-readable code (`not_found`, `rate_limited`, …): branch on it, not on `message`. */
  readonly code: AnimalStoreErrorCode;
  /** The answer's `X-Request-Id`, to quote to support. */
  readonly requestId: string | undefined;
  /** Seconds the service asked to wait (`Retry-After`), on 429, 503 and 409 in-flight answers. */
  readonly retryAfter: number | undefined;
  /** Field-level problems of a `validation_failed` answer. */
  readonly details: ErrorBody['details'];
  /**
   * The answer the error came in (status, headers, rate-limit state), as a result's
   * `lastResponse`; undefined when none came (`ConnectionError`, a call the client did not send).
   * Not enumerable, so a logged error does not print every header.
   */
  declare readonly lastResponse: LastResponse | undefined;

  constructor(fields: AnimalStoreErrorFields) {
    super(fields.message, fields.cause === undefined ? undefined : { cause: fields.cause });
    this.status = fields.status;
    this.code = fields.code;
    this.requestId = fields.requestId ?? fields.lastResponse?.requestId;
    this.retryAfter = fields.retryAfter;
    this.details = fields.details;
    Object.defineProperty(this, 'lastResponse', {
      value: fields.lastResponse,
      enumerable: false,
      writable: false,
      configurable: true,
    });
  }

  /**
   * The error of an answer that is not a success, from its body (parsed JSON or text), as the
   * subclass of its kind.
   */
  static fromAnswer(
    response: Response,
    body: unknown,
    context: AnswerContext = {},
  ): AnimalStoreError {
    const fields = (body && typeof body === 'object' ? body : {}) as Partial<ErrorBody>;
    const code =
      typeof fields.code === 'string'
        ? (fields.code as AnimalStoreErrorCode)
        : (`http_${response.status}` as const);
    const message =
      typeof fields.message === 'string'
        ? fields.message
        : `HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}`;
    return errorOfKind({
      status: response.status,
      code,
      message:
        code === 'missing_credentials' && context.apiKey !== undefined
          ? missingCredentials(context.apiKey)
          : message,
      requestId: response.headers.get('x-request-id') ?? undefined,
      retryAfter: retryAfterSeconds(response.headers),
      details: Array.isArray(fields.details) ? fields.details : undefined,
      lastResponse: context.lastResponse,
    });
  }
}

/**
 * The service's `missing_credentials` says which header to send; a client user sets no header,
 * so the client says what to change in their code instead.
 */
function missingCredentials(apiKey: boolean): string {
  return apiKey
    ? 'This client has an apiKey, yet the service received no Authorization header: the ' +
        "call's own headers, or something between (a proxy), removed it."
    : 'No API key was sent: make the client with one, ' +
        'createClient({ apiKey: process.env.ANIMAL_STORE_KEY }).';
}

/** 401: no key, a malformed `Authorization`, an unknown or revoked key, a wrong password. */
export class AuthenticationError extends AnimalStoreError {
  override readonly name: string = 'AuthenticationError';
}

/** 403: the credentials are good but may not do this. */
export class PermissionError extends AnimalStoreError {
  override readonly name: string = 'PermissionError';
}

/** 404 (and 410, an operation past its sunset): nothing of this account by that id. */
export class NotFoundError extends AnimalStoreError {
  override readonly name: string = 'NotFoundError';
}

/** 409: the resource's state refuses the change (`pet_not_available`, `category_in_use`, …). */
export class ConflictError extends AnimalStoreError {
  override readonly name: string = 'ConflictError';
}

/**
 * The request as sent is refused, and would be again: 400 (`validation_failed` with `details`,
 * `unknown_category`, …), 413, 414, 422 and 431. Change it before sending it again.
 */
export class ValidationError extends AnimalStoreError {
  override readonly name: string = 'ValidationError';
}

/**
 * 429: `rate_limited` once the client has waited as long as it may (`retryAfter` says how much
 * longer), or `key_banned`; also a call the client did not send because the wait would have
 * been longer than `maxWaitMs`.
 */
export class RateLimitError extends AnimalStoreError {
  override readonly name: string = 'RateLimitError';
}

/**
 * The `Idempotency-Key` is the problem, whatever the status: `invalid_idempotency_key` (400),
 * `idempotency_key_in_use` (409, after the client's retries), `idempotency_key_mismatch` (422:
 * the key was used with another request).
 */
export class IdempotencyError extends AnimalStoreError {
  override readonly name: string = 'IdempotencyError';
}

/** 5xx: the service (or a gateway before it) failed; `outcome_unknown` may have stored it. */
export class ServerError extends AnimalStoreError {
  override readonly name: string = 'ServerError';
}

/** No answer (`status` 0): the connection failed, timed out or was aborted (`code` says which). */
export class ConnectionError extends AnimalStoreError {
  override readonly name: string = 'ConnectionError';

  constructor(code: 'connection_failed' | 'timeout' | 'aborted', message: string, cause?: unknown) {
    super({ status: 0, code, message, cause });
  }
}

/** @deprecated The former name of `ConnectionError`. */
export const AnimalStoreConnectionError = ConnectionError;
/** @deprecated The former name of `ConnectionError`. */
export type AnimalStoreConnectionError = ConnectionError;

const IDEMPOTENCY_CODES: ReadonlySet<string> = new Set<ErrorCode>([
  'invalid_idempotency_key',
  'idempotency_key_in_use',
  'idempotency_key_mismatch',
]);

/** The error of an answer, as the class of its kind (by code first, then by status). */
export function errorOfKind(fields: AnimalStoreErrorFields): AnimalStoreError {
  const { status, code } = fields;
  if (IDEMPOTENCY_CODES.has(code)) return new IdempotencyError(fields);
  if (status === 401) return new AuthenticationError(fields);
  if (status === 403) return new PermissionError(fields);
  if (status === 404 || status === 410) return new NotFoundError(fields);
  if (status === 409) return new ConflictError(fields);
  if (status === 429) return new RateLimitError(fields);
  if (status >= 500) return new ServerError(fields);
  if ([400, 413, 414, 422, 431].includes(status)) return new ValidationError(fields);
  return new AnimalStoreError(fields);
}
