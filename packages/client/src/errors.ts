import type { ErrorBody } from './types.js';

/**
 * Every failed call throws this: an error answer of the service (`status` its HTTP status,
 * `code`/`message` from the Error body), or, with `status` 0, a request that got no answer
 * (`AnimalStoreConnectionError`). Nothing else is thrown by a call.
 */
export class AnimalStoreError extends Error {
  override readonly name: string = 'AnimalStoreError';
  /** The HTTP status; 0 when no answer came. */
  readonly status: number;
  /** The service's machine-readable code (`not_found`, `rate_limited`, …). */
  readonly code: string;
  /** The answer's `X-Request-Id`, to quote to support. */
  readonly requestId: string | undefined;
  /** Seconds the service asked to wait (`Retry-After`), on 429, 503 and 409 in-flight answers. */
  readonly retryAfter: number | undefined;
  /** Field-level problems of a `validation_failed` answer. */
  readonly details: ErrorBody['details'];

  constructor(fields: {
    status: number;
    code: string;
    message: string;
    requestId?: string | undefined;
    retryAfter?: number | undefined;
    details?: ErrorBody['details'];
    cause?: unknown;
  }) {
    super(fields.message, fields.cause === undefined ? undefined : { cause: fields.cause });
    this.status = fields.status;
    this.code = fields.code;
    this.requestId = fields.requestId;
    this.retryAfter = fields.retryAfter;
    this.details = fields.details;
  }

  /** The error of an answer that is not a success, from its body (parsed JSON or text). */
  static fromAnswer(response: Response, body: unknown): AnimalStoreError {
    const fields = (body && typeof body === 'object' ? body : {}) as Partial<ErrorBody>;
    return new AnimalStoreError({
      status: response.status,
      code: typeof fields.code === 'string' ? fields.code : `http_${response.status}`,
      message:
        typeof fields.message === 'string'
          ? fields.message
          : `HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}`,
      requestId: response.headers.get('x-request-id') ?? undefined,
      retryAfter: retryAfterSeconds(response.headers),
      details: Array.isArray(fields.details) ? fields.details : undefined,
    });
  }
}

/** No answer: the connection failed, timed out or was aborted (`code` says which). */
export class AnimalStoreConnectionError extends AnimalStoreError {
  override readonly name: string = 'AnimalStoreConnectionError';

  constructor(code: 'connection_failed' | 'timeout' | 'aborted', message: string, cause?: unknown) {
    super({ status: 0, code, message, cause });
  }
}

/** `Retry-After` in seconds: delta-seconds or an HTTP date (RFC 9110 §10.2.3). */
export function retryAfterSeconds(headers: Headers, now = Date.now()): number | undefined {
  const value = headers.get('retry-after');
  if (value === null) return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000));
}
