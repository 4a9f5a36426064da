/**
 * The one table of error codes. It drives the error handler (status of each code) and the
 * OpenAPI document (which statuses an operation can answer, and the codes behind each one),
 * so what the docs promise and what the service does cannot drift apart.
 */
export const ERRORS = {
  bad_request: {
    status: 400,
    description: 'The request could not be understood.',
    next: 'Check the request against its operation in /docs, then send it again.',
  },
  invalid_json: {
    status: 400,
    description: 'The body is not valid JSON.',
    next: 'Send the body as valid JSON, encoded in UTF-8.',
  },
  unsupported_content_type: {
    status: 400,
    description: 'The body is not sent as `Content-Type: application/json`.',
    next: 'Send the body as JSON with `Content-Type: application/json`.',
  },
  validation_failed: {
    status: 400,
    description: 'A parameter or body field is missing, unknown, or holds an invalid value.',
    next: "Correct the value and send the request again; /docs gives each field's rules.",
  },
  invalid_cursor: {
    status: 400,
    description: 'The `cursor` parameter is not one we issued.',
    next: "Follow the `Link` header's next URL as it is, or leave out `cursor` for the first page.",
  },
  invalid_idempotency_key: {
    status: 400,
    description:
      'The `Idempotency-Key` header is empty, longer than 255 characters, not printable ASCII, ' +
      'or sent more than once.',
    next: 'Send one `Idempotency-Key` of 1 to 255 printable ASCII characters: a new UUID, say.',
  },
  unknown_category: {
    status: 400,
    description: 'The `categoryId` does not name a category of this account.',
    next: 'Use the id of one of your categories (`GET /v1/categories`), or create it first.',
  },
  webhook_url_refused: {
    status: 400,
    description:
      'The webhook URL is not allowed: not `https` (outside development), or its host does not ' +
      'resolve, or resolves to a loopback, private, link-local or metadata address.',
    next: 'Use an `https` URL whose host resolves to a public address.',
  },
  missing_credentials: {
    status: 401,
    description: 'No `Authorization` header was sent.',
    next:
      "Send your API key as `Authorization: Bearer <API_KEY>`; get one in the portal's Keys " +
      'page or with `POST /v1/keys`.',
  },
  malformed_authorization: {
    status: 401,
    description: 'The `Authorization` header is not of the form the operation needs.',
    next: 'Send the `Authorization` header as /docs shows for the operation.',
  },
  invalid_api_key: {
    status: 401,
    description: 'The API key is unknown, revoked, or belongs to another environment.',
    next: "Get a working key in the portal's Keys page or with `POST /v1/keys`.",
  },
  invalid_credentials: {
    status: 401,
    description: 'The email or password is wrong.',
    next: 'Check the email and the password, then try again.',
  },
  insufficient_scope: {
    status: 403,
    description:
      "The API key does not hold the operation's scope (`WWW-Authenticate` names it); nothing " +
      'was changed. Use a key with that scope, or with full access.',
    next:
      "Use a key with that scope, or with full access; make one in the portal's Keys page or " +
      'with `POST /v1/keys`.',
  },
  origin_not_allowed: {
    status: 403,
    description: 'A publishable key was sent from an origin it does not list, or with no `Origin`.',
    next: 'Use the key from one of its origins, or a secret key on a server.',
  },
  csrf_failed: {
    status: 403,
    description: 'A portal form was sent without its valid CSRF token; reload the page and retry.',
    next: 'Reload the page and send the form again.',
  },
  not_found: {
    status: 404,
    description: 'The resource does not exist in this account.',
    next: "Check the id: the collection's list (`GET` without the id) shows the account's.",
  },
  route_not_found: {
    status: 404,
    description: 'No operation is served at this path.',
    next: "See /docs for the paths served: the API's start with `/v1`.",
  },
  method_not_allowed: {
    status: 405,
    description: 'The path is served, but not with this method; `Allow` lists those it is.',
    next: 'Send one of the methods `Allow` lists.',
  },
  request_timeout: {
    status: 408,
    description: 'The request (its headers, or all of it) did not arrive in time.',
    next: 'Send the whole request again, without pausing.',
  },
  email_taken: {
    status: 409,
    description: 'An account with this email already exists.',
    next: 'Sign in with that email, or sign up with another.',
  },
  invalid_transition: {
    status: 409,
    description: 'The pet cannot move from its current status to the requested one.',
    next: 'Read its current status, then ask for a move from it that /docs allows.',
  },
  category_in_use: {
    status: 409,
    description: 'The category still has pets.',
    next: 'Move its pets to another category, or delete them, first.',
  },
  pet_not_available: {
    status: 409,
    description: 'The pet is not `available`, so it cannot be ordered.',
    next: 'Choose an available pet instead (`GET /v1/pets?status=available`).',
  },
  pet_on_order: {
    status: 409,
    description: 'The pet has an open order; the order owns its status until it ends.',
    next: "Cancel or deliver the pet's open order first.",
  },
  order_open: {
    status: 409,
    description:
      'The order is still open (`placed` or `approved`): only an ended order can be removed.',
    next: 'Cancel it first (`PATCH /v1/store/orders/{orderId}` with `cancelled`), then remove it.',
  },
  message_pending: {
    status: 409,
    description: 'The message is not settled yet (`queued` or `processing`).',
    next: 'Wait until it is `sent` or `failed` (`GET /messages/{messageId}`), then remove it.',
  },
  endpoint_disabled: {
    status: 409,
    description: 'The webhook endpoint is disabled, so nothing can be sent to it.',
    next: 'Enable it first (`PATCH /v1/webhooks/{webhookId}` with `enabled: true`).',
  },
  sandbox_only: {
    status: 403,
    description: 'Only test data can be reset, and a production instance holds live data.',
    next: 'Use a development or staging instance, and its `as_test_` key, to reset test data.',
  },
  key_limit_reached: {
    status: 409,
    description: 'The account holds the most live API keys it may (100); revoke one first.',
    next: 'Revoke a key you no longer use first (`DELETE /v1/keys/{keyId}`).',
  },
  idempotency_key_in_use: {
    status: 409,
    description:
      'The `Idempotency-Key` is in use: by a request still running (retry after `Retry-After` ' +
      'seconds), or by another credential of the account, whose answer goes to it alone (no ' +
      '`Retry-After`: send a new key).',
    next: 'Send a new `Idempotency-Key` for a new request, or retry after `Retry-After` seconds.',
  },
  too_many_webhooks: {
    status: 409,
    description: 'The account has as many webhook endpoints as it may; remove one first.',
    next: 'Remove an endpoint you no longer use first (`DELETE /v1/webhooks/{webhookId}`).',
  },
  delivery_in_progress: {
    status: 409,
    description: 'The delivery is being sent right now; retry it once it has settled.',
    next: 'Retry it once it has settled.',
  },
  endpoint_removed: {
    status: 410,
    description: 'The operation has passed its sunset date.',
    next: 'Use the successor the `Link` header names.',
  },
  payload_too_large: {
    status: 413,
    description: 'The body is larger than the service accepts.',
    next: "Send a smaller body; /docs gives each field's limit.",
  },
  uri_too_long: {
    status: 414,
    description: 'The request line (path and query) is too long.',
    next: 'Shorten the query, or split the request in several.',
  },
  idempotency_key_mismatch: {
    status: 422,
    description:
      'This `Idempotency-Key` was used with another request (method, path or body); use a new key.',
    next: 'Send a new `Idempotency-Key` for a new request.',
  },
  headers_too_large: {
    status: 431,
    description: 'The request headers are larger than the service accepts.',
    next: 'Send fewer or shorter headers (cookies count too).',
  },
  rate_limited: {
    status: 429,
    description: 'A rate-limit window of the plan is used up.',
    next: 'Wait `Retry-After` seconds, then retry, backing off exponentially.',
  },
  key_banned: {
    status: 429,
    description: 'The key kept sending while limited and is temporarily banned.',
    next: 'Wait `Retry-After` seconds and send nothing with this key meanwhile.',
  },
  internal_error: {
    status: 500,
    description: 'Something broke on our side.',
    next: "Retry shortly; if it keeps failing, give the operator the answer's `X-Request-Id`.",
  },
  service_unavailable: {
    status: 503,
    description: 'A dependency of the service is not reachable.',
    next: 'Retry after `Retry-After` seconds.',
  },
  outcome_unknown: {
    status: 503,
    description:
      'The change may have been stored: the database could not confirm it. Send the request ' +
      'again with the same `Idempotency-Key` (the first answer is replayed if it was stored), ' +
      'or read the resource to see.',
    next: 'Send it again with the same `Idempotency-Key`, or read the resource to see.',
  },
} as const satisfies Record<string, { status: number; description: string; next: string }>;

export type ErrorCode = keyof typeof ERRORS;

/**
 * An instruction to the caller: a clause that begins the message, or follows `.`, `;`, `:`,
 * `, then` or `, or`, with one of these verbs ("Send …", "…; retry in 3 s", "…: use GET …").
 * Each code's `next` is one (test/errors.test.ts).
 */
const STEP =
  /(?:^|[.;:]\s+|,\s+(?:then|or)\s+)(?:ask|back|cancel|check|choose|copy|correct|create|delete|enable|follow|get|leave|list|move|read|reload|remove|retry|revoke|see|send|shorten|sign|try|turn|use|wait)\s/i;

/** Whether `message` tells the caller what to do: a clause of it begins with an instruction. */
export function saysNextStep(message: string): boolean {
  return STEP.test(message);
}

/**
 * The message an Error body carries: the problem as its site said it, then its code's next
 * step, unless the site already said one. Every body is made by `errorBody`, so every answer
 * says what to do next, whoever wrote its message, and none says it twice
 * (docs/decisions/0078-errors-say-what-to-do.md).
 */
export function withNextStep(code: ErrorCode, message: string): string {
  return saysNextStep(message) ? message : `${message} ${ERRORS[code].next}`;
}

/** An Error body: `{code, message, status, details?}`, its message saying what to do next. */
export interface ErrorBody {
  code: ErrorCode;
  message: string;
  status: number;
  details?: ErrorDetail[];
}

export function errorBody(code: ErrorCode, message: string, details?: ErrorDetail[]): ErrorBody {
  return {
    code,
    message: withNextStep(code, message),
    status: ERRORS[code].status,
    ...(details && { details }),
  };
}

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
