import { type TSchema, Type } from 'typebox';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../../domain/pagination.js';
import { ERRORS, type ErrorCode } from '../../errors.js';

export const ErrorBody = Type.Object(
  {
    code: Type.String({ description: 'Machine-readable error code (snake_case), see the list.' }),
    message: Type.String({ description: 'Human-readable description.' }),
    status: Type.Integer({ description: 'The HTTP status code, repeated.' }),
    details: Type.Optional(
      Type.Array(
        Type.Object({
          location: Type.String({ description: 'Where: `body/name`, `query/limit`, …' }),
          message: Type.String(),
        }),
        { description: 'Field-level problems, for validation errors.' },
      ),
    ),
  },
  { title: 'Error', additionalProperties: false },
);

// Strings a person typed: no control characters (NUL breaks PostgreSQL text), no lone
// surrogates (not encodable as UTF-8), and not only whitespace.
const TEXT_PATTERN = '^(?!\\s*$)[^\\p{Cc}\\p{Cs}]+$';

export const Text = (description: string, maxLength = 200) =>
  Type.String({ minLength: 1, maxLength, pattern: TEXT_PATTERN, description });

export const Name = (description: string) => Text(description);

/** Our int64 ids; larger numbers cannot be ids we issued (JSON numbers lose precision past 2^53). */
export const Id = (description: string) =>
  Type.Integer({ format: 'int64', minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description });

export const Limit = Type.Optional(
  Type.Integer({
    minimum: 1,
    maximum: MAX_PAGE_SIZE,
    default: DEFAULT_PAGE_SIZE,
    description: `Maximum number of items returned (1 to ${MAX_PAGE_SIZE}, default ${DEFAULT_PAGE_SIZE}).`,
  }),
);

export const Cursor = Type.String({
  minLength: 1,
  maxLength: 64,
  description: 'Opaque cursor of the next page, taken from the `Link: rel="next"` header.',
});

export const LinkHeader = Type.String({
  description:
    'RFC 8288 link to the next page (`<…>; rel="next"`); absent on the last page. ' +
    'Follow it as given: cursors are opaque.',
});

/**
 * The error responses of an operation, built from the error table: one entry per status,
 * naming the codes the operation can answer with it.
 */
export function errorResponses(...codes: ErrorCode[]): Record<number, TSchema> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of ['internal_error', ...codes] as ErrorCode[]) {
    const status = ERRORS[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const responses: Record<number, TSchema> = {};
  for (const [status, list] of byStatus) {
    responses[status] = Type.Object(ErrorBody.properties, {
      ...ErrorBody,
      description: list.map((c) => `\`${c}\`: ${ERRORS[c].description}`).join(' '),
    });
  }
  return responses;
}

/** Errors every operation can answer, on top of its own. */
export const COMMON_ERRORS: ErrorCode[] = [
  'bad_request',
  'rate_limited',
  'key_banned',
  'service_unavailable',
];
export const BEARER_ERRORS: ErrorCode[] = [
  'missing_credentials',
  'malformed_authorization',
  'invalid_api_key',
];
export const BODY_ERRORS: ErrorCode[] = [
  'invalid_json',
  'unsupported_content_type',
  'validation_failed',
  'payload_too_large',
];
