import {
  type TObjectOptions,
  type TProperties,
  type TSchema,
  type TSchemaOptions,
  Type,
} from 'typebox';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../../domain/pagination.js';
import { ERRORS, type ErrorCode } from '../../errors.js';

/**
 * A named object of the document (its `title` makes it a component: src/http/openapi-document.ts)
 * that takes no other properties than its own: bodies and answers are closed.
 */
export const ClosedObject = <T extends TProperties>(
  properties: T,
  { title, ...rest }: TObjectOptions & { title: string },
) => Type.Object(properties, { title, additionalProperties: false, ...rest });

export const ErrorDetail = ClosedObject(
  {
    location: Type.String({
      maxLength: 256,
      description: 'Where: `body/name`, `query/limit`, `path/petId`, …',
    }),
    message: Type.String({
      maxLength: 512,
      description: 'What is wrong there, in plain words.',
    }),
  },
  {
    title: 'ErrorDetail',
    description: 'One problem with one field.',
    examples: [{ location: 'body/status', message: 'must be one of: available, pending, sold' }],
  },
);

export const ErrorBody = ClosedObject(
  {
    code: Type.String({
      maxLength: 64,
      pattern: '^[a-z][a-z0-9_]*$',
      description:
        'Machine-readable error code (snake_case), from the table in the introduction. ' +
        'Branch on this, not on the message.',
    }),
    message: Type.String({
      maxLength: 1024,
      description: 'Human-readable description, for people; its wording may change.',
    }),
    status: Type.Integer({
      format: 'int32',
      minimum: 400,
      maximum: 599,
      description: 'The HTTP status code, repeated.',
    }),
    details: Type.Optional(
      Type.Array(ErrorDetail, {
        maxItems: 20,
        description: 'Field-level problems, for validation errors.',
      }),
    ),
  },
  {
    title: 'Error',
    description: 'Every error the service answers, whatever the status.',
    examples: [
      {
        code: 'validation_failed',
        message: 'Invalid body/status: must be one of: available, pending, sold.',
        status: 400,
        details: [{ location: 'body/status', message: 'must be one of: available, pending, sold' }],
      },
    ],
  },
);

/*
 * Patterns in the one regular-expression dialect every JSON Schema validator shares: explicit
 * `\uXXXX` ranges, no `\p{…}` classes (which validators without the `u` flag read as the
 * letters p, {, C, c, }), no lookahead. Each reads the same with and without the `u` flag:
 * a character outside the surrogate range, or a well-formed surrogate pair (one character
 * outside the Basic Multilingual Plane, such as an emoji). test/patterns.test.ts checks that
 * they accept exactly what the `\p{…}` patterns they replace did.
 */
/** A well-formed surrogate pair: one character beyond U+FFFF, read without the `u` flag. */
const PAIR = '[\\uD800-\\uDBFF][\\uDC00-\\uDFFF]';
/** JavaScript's `\s` less the control characters and U+FEFF (which text refuses anyway). */
const SPACES = '\\u0020\\u00A0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000';
/**
 * Bidirectional embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069), and the
 * invisible U+FEFF: in a name, they make a dashboard show other text than was stored (a name
 * that reads backwards past its end, "Trojan Source", CVE-2021-42574).
 */
const BIDI = '\\u202A-\\u202E\\u2066-\\u2069\\uFEFF';
/** Controls (Unicode Cc: U+0000–U+001F, U+007F–U+009F), BIDI and lone surrogates excluded. */
const TEXT_CHAR = `(?:[^\\u0000-\\u001F\\u007F-\\u009F${BIDI}\\uD800-\\uDFFF]|${PAIR})`;
/** A text character that is not whitespace either. */
const INK_CHAR = `(?:[^\\u0000-\\u001F\\u007F-\\u009F${BIDI}\\uD800-\\uDFFF${SPACES}]|${PAIR})`;

// Strings a person typed: no control characters (NUL breaks PostgreSQL text), no
// bidirectional controls, no lone surrogates (not encodable as UTF-8), and not only whitespace.
export const TEXT_PATTERN = `^[${SPACES}]*${INK_CHAR}${TEXT_CHAR}*$`;

/** Any text without lone surrogates (a password: its UTF-8 bytes are what is hashed). */
export const NO_LONE_SURROGATES_PATTERN = `^(?:[^\\uD800-\\uDFFF]|${PAIR})*$`;

/** Any text but NUL and lone surrogates (a message: everything else is the sender's). */
export const STORABLE_TEXT_PATTERN = `^(?:[^\\u0000\\uD800-\\uDFFF]|${PAIR})*$`;

/** One of `values`, typed `string` in the document too: generators type an enum by its `type`
 * (without it, openapi-typescript writes `unknown`). */
export const StringEnum = <const T extends string[]>(
  values: readonly [...T],
  options: TSchemaOptions = {},
) => Type.Enum(values, { type: 'string', ...options });

/** An RFC 3339 time in UTC, as the service writes them. */
export const Timestamp = (description: string) =>
  Type.String({ format: 'date-time', maxLength: 32, description });

export const Text = (description: string, maxLength = 200) =>
  Type.String({ minLength: 1, maxLength, pattern: TEXT_PATTERN, description });

export const Name = (description: string) => Text(description);

/** Our int64 ids; larger numbers cannot be ids we issued (JSON numbers lose precision past 2^53). */
export const Id = (description: string) =>
  Type.Integer({ format: 'int64', minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description });

const Limit = Type.Optional(
  Type.Integer({
    format: 'int32',
    minimum: 1,
    maximum: MAX_PAGE_SIZE,
    default: DEFAULT_PAGE_SIZE,
    description: `Maximum number of items returned (1 to ${MAX_PAGE_SIZE}, default ${DEFAULT_PAGE_SIZE}).`,
  }),
);

const Cursor = Type.String({
  minLength: 1,
  maxLength: 64,
  description: 'Opaque cursor of the next page, taken from the `Link: rel="next"` header.',
});

/** A list's query: the size of its page, its filters, then the cursor of the next page. */
export const ListQuery = <T extends TProperties>(filters: T) =>
  Type.Object(
    { limit: Limit, ...filters, cursor: Type.Optional(Cursor) },
    { additionalProperties: false },
  );

/** A page of a list, as its body: the items of the page, at most a page's size of them. */
export const Page = <T extends TSchema>(
  item: T,
  { title, ...rest }: { title: string; description?: string; examples: unknown[] },
) => Type.Array(item, { title, maxItems: MAX_PAGE_SIZE, ...rest });

/**
 * A string id of ours (`msg_…`, `we_…`) as a path or a query names it: ours are a prefix and
 * base62, so anything else is no id (and answers 404), and a NUL is not even text to PostgreSQL.
 */
export const IdParam = (description: string) =>
  Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_]+$', description });

/** How many of something: any int64 from 0. */
export const Count = (description: string) =>
  Type.Integer({ format: 'int64', minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description });

/** Where a response header names its component (src/http/openapi-document.ts, HEADERS). */
export const HEADER_KEY = 'x-header';

/** Where an error response lists the codes it stands for (read by src/http/openapi-document.ts). */
export const ERROR_CODES_KEY = 'x-error-codes';

/** "`code`: meaning" for each code, the form every error response's description takes. */
export function describeCodes(codes: readonly ErrorCode[]): string {
  return codes.map((c) => `\`${c}\`: ${ERRORS[c].description}`).join(' ');
}
