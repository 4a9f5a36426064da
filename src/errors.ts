/**
 * The one table of error codes. It drives the error handler (status of each code) and the
 * OpenAPI document (which statuses an operation can answer, and the codes behind each one),
 * so what the docs promise and what the service does cannot drift apart.
 */
export const ERRORS = {
  bad_request: { status: 400, description: 'The request could not be understood.' },
  invalid_json: { status: 400, description: 'The body is not valid JSON.' },
  unsupported_content_type: {
    status: 400,
    description: 'The body is not sent as `Content-Type: application/json`.',
  },
  validation_failed: {
    status: 400,
    description: 'A parameter or body field is missing, unknown, or holds an invalid value.',
  },
  invalid_cursor: { status: 400, description: 'The `cursor` parameter is not one we issued.' },
  invalid_idempotency_key: {
    status: 400,
    description:
      'The `Idempotency-Key` header is empty, longer than 255 characters, not printable ASCII, ' +
      'or sent more than once.',
  },
  unknown_category: {
    status: 400,
    description: 'The `categoryId` does not name a category of this account.',
  },
  webhook_url_refused: {
    status: 400,
    description:
      'The webhook URL is not allowed: not `https` (outside development), or its host does not ' +
      'resolve, or resolves to a loopback, private, link-local or metadata address.',
  },
  missing_credentials: {
    status: 401,
    description: 'No `Authorization` header was sent.',
  },
  malformed_authorization: {
    status: 401,
    description: 'The `Authorization` header is not of the form the operation needs.',
  },
  invalid_api_key: {
    status: 401,
    description: 'The API key is unknown, revoked, or belongs to another environment.',
  },
  invalid_credentials: { status: 401, description: 'The email or password is wrong.' },
  insufficient_scope: {
    status: 403,
    description:
      "The API key does not hold the operation's scope (`WWW-Authenticate` names it); nothing " +
      'was changed. Use a key with that scope, or with full access.',
  },
  csrf_failed: {
    status: 403,
    description: 'A portal form was sent without its valid CSRF token; reload the page and retry.',
  },
  not_found: { status: 404, description: 'The resource does not exist in this account.' },
  route_not_found: { status: 404, description: 'No operation is served at this path.' },
  method_not_allowed: {
    status: 405,
    description: 'The path is served, but not with this method; `Allow` lists those it is.',
  },
  request_timeout: {
    status: 408,
    description: 'The request (its headers, or all of it) did not arrive in time.',
  },
  email_taken: { status: 409, description: 'An account with this email already exists.' },
  invalid_transition: {
    status: 409,
    description: 'The pet cannot move from its current status to the requested one.',
  },
  category_in_use: { status: 409, description: 'The category still has pets.' },
  pet_not_available: {
    status: 409,
    description: 'The pet is not `available`, so it cannot be ordered.',
  },
  pet_on_order: {
    status: 409,
    description: 'The pet has an open order; the order owns its status until it ends.',
  },
  key_limit_reached: {
    status: 409,
    description: 'The account holds the most live API keys it may (100); revoke one first.',
  },
  idempotency_key_in_use: {
    status: 409,
    description:
      'The `Idempotency-Key` is in use: by a request still running (retry after `Retry-After` ' +
      'seconds), or by another credential of the account, whose answer goes to it alone (no ' +
      '`Retry-After`: send a new key).',
  },
  too_many_webhooks: {
    status: 409,
    description: 'The account has as many webhook endpoints as it may; remove one first.',
  },
  delivery_in_progress: {
    status: 409,
    description: 'The delivery is being sent right now; retry it once it has settled.',
  },
  endpoint_removed: { status: 410, description: 'The operation has passed its sunset date.' },
  payload_too_large: { status: 413, description: 'The body is larger than the service accepts.' },
  uri_too_long: { status: 414, description: 'The request line (path and query) is too long.' },
  idempotency_key_mismatch: {
    status: 422,
    description:
      'This `Idempotency-Key` was used with another request (method, path or body); use a new key.',
  },
  headers_too_large: {
    status: 431,
    description: 'The request headers are larger than the service accepts.',
  },
  rate_limited: { status: 429, description: 'A rate-limit window of the plan is used up.' },
  key_banned: {
    status: 429,
    description: 'The key kept sending while limited and is temporarily banned.',
  },
  internal_error: { status: 500, description: 'Something broke on our side.' },
  service_unavailable: {
    status: 503,
    description: 'A dependency of the service is not reachable.',
  },
  outcome_unknown: {
    status: 503,
    description:
      'The change may have been stored: the database could not confirm it. Send the request ' +
      'again with the same `Idempotency-Key` (the first answer is replayed if it was stored), ' +
      'or read the resource to see.',
  },
} as const satisfies Record<string, { status: number; description: string }>;

export type ErrorCode = keyof typeof ERRORS;

export interface ErrorDetail {
  /** Where the problem is: `body`, `query`, `params` or `headers`, then a JSON pointer. */
  location: string;
  message: string;
}

/** An error answered to the client as `{code, message, status, details?}`. */
export class ApiError extends Error {
  readonly status: number;

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetail[],
    readonly headers?: Readonly<Record<string, string>>,
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = ERRORS[code].status;
  }
}

/** Retry-After of a 503 for a dependency that is away or busy for a moment. */
export const RETRY_SOON: Readonly<Record<string, string>> = { 'retry-after': '1' };

/** What of a client's input an error message may repeat: the start of it, never kilobytes. */
export function excerpt(input: string, max = 100): string {
  return input.length <= max ? input : `${input.slice(0, max)}…`;
}
