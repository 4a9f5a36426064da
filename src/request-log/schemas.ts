import { Type } from 'typebox';
import { ERRORS } from '../errors.js';
import {
  ClosedObject,
  Count,
  ErrorBody,
  IdParam,
  ListQuery,
  Page,
  STORABLE_TEXT_PATTERN,
  StringEnum,
  Timestamp,
} from '../http/schemas/common.js';
import { BODY_MAX_BYTES, STATS_PERIODS } from './domain.js';

/** A request id as the service takes one from `X-Request-Id`, or makes one (a UUID). */
export const RequestId = Type.String({
  minLength: 1,
  maxLength: 128,
  pattern: '^[A-Za-z0-9_.-]+$',
  description: "The request's `X-Request-Id`: the client's, or the UUID the service gave it.",
});

/** The statuses the API answers (the error table's and its successes'), and their classes. */
const STATUS_FILTERS = [
  '2xx',
  '4xx',
  '5xx',
  ...[...new Set([200, 201, 202, 204, ...Object.values(ERRORS).map((error) => error.status)])]
    .sort()
    .map(String),
];

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

const Method = Type.String({
  maxLength: 16,
  pattern: '^[A-Z]+$',
  description: 'The HTTP method.',
});

const Path = Type.String({
  minLength: 1,
  maxLength: 2048,
  pattern: '^/[^\\u0000-\\u001F\\u007F]*$',
  description: 'The path as sent (percent-encoded as it was), without the query.',
});

const KeyId = Type.Union(
  [Type.String({ maxLength: 64, pattern: '^key_[A-Za-z0-9]+$' }), Type.Null()],
  { description: 'The API key used (`key_…`); null for HTTP Basic (`/v1/keys`).' },
);

const ENTRY_EXAMPLE = {
  id: '0b6e1c9e-4f2a-4c1e-9a57-3d2f8c1b7e40',
  method: 'POST',
  route: '/v1/pets',
  path: '/v1/pets',
  status: 400,
  durationMs: 1.25,
  keyId: 'key_0aBcDeFgHiJkLmNo',
  errorCode: 'validation_failed',
  idempotencyKey: 'ikh_Qm3kY2Hq0sX8dVbN1aZp4w',
  replayed: false,
  clientAddress: '203.0.113.0/24',
  createdAt: '2026-11-24T12:00:00.000Z',
  count: 1,
  traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
};

const entryFields = {
  id: RequestId,
  method: Method,
  route: Type.Union(
    [Type.String({ maxLength: 256, pattern: '^/[^\\u0000-\\u001F]*$' }), Type.Null()],
    {
      description: "The operation's path (`/v1/pets/{petId}`); null when none matched.",
    },
  ),
  path: Path,
  status: Type.Integer({
    format: 'int32',
    minimum: 100,
    maximum: 599,
    description: 'The HTTP status answered.',
  }),
  durationMs: Type.Number({
    minimum: 0,
    maximum: 86_400_000,
    description: 'Milliseconds from the request received to its answer sent.',
  }),
  keyId: KeyId,
  errorCode: Type.Union(
    [Type.String({ maxLength: 64, pattern: '^[a-z][a-z0-9_]*$' }), Type.Null()],
    { description: "The error's `code` (4xx, 5xx), or null." },
  ),
  idempotencyKey: Type.Union(
    [Type.String({ maxLength: 64, pattern: '^ikh_[A-Za-z0-9_-]+$' }), Type.Null()],
    {
      description:
        'A keyed hash of the `Idempotency-Key` sent (`ikh_…`: the same key gives the same ' +
        'value within the account; the key itself is never kept, so the log cannot be used ' +
        'to replay a request), or null without one.',
    },
  ),
  replayed: Type.Boolean({ description: 'Answered with the kept answer of its key.' }),
  clientAddress: Type.Union(
    [Type.String({ maxLength: 64, pattern: '^[0-9A-Fa-f:./]+$' }), Type.Null()],
    { description: "The client's IPv4 /24 or IPv6 /64; null if it left before its answer." },
  ),
  createdAt: Timestamp('When the request arrived (UTC).'),
  count: Type.Integer({
    format: 'int32',
    minimum: 1,
    maximum: 2_147_483_647,
    description:
      "How many requests the entry stands for: 1, or, for refusals (`429`), more. A key's " +
      'first refusal of a minute is an entry of its own; the rest of that minute are one entry ' +
      '(the first of them, its id and time) with their number, logged once the minute is over.',
  }),
  traceId: Type.Union(
    [Type.String({ minLength: 32, maxLength: 32, pattern: '^[0-9a-f]{32}$' }), Type.Null()],
    {
      description:
        'The OpenTelemetry trace the request was a span of, where the service sends traces ' +
        '(its operator set an OTLP endpoint); null otherwise.',
    },
  ),
};

/** What an entry shows of an error, in `getRequest`'s answer only (a list has none of it). */
const errorFields = {
  requestBody: Type.Optional(
    Type.Union(
      [Type.String({ maxLength: BODY_MAX_BYTES, pattern: STORABLE_TEXT_PATTERN }), Type.Null()],
      {
        description:
          `\`getRequest\` only. For a 4xx or 5xx answer, the request's JSON body as text, at ` +
          `most ${BODY_MAX_BYTES / 1024} KB, redacted before it was stored: the value of ` +
          'every field whose name contains `pass`, `pwd`, `secret`, `key`, `token`, `auth`, ' +
          '`credential`, `cookie`, `session`, `bearer` or `signature` (in any case, at any ' +
          'depth), and, in any string, API keys, webhook secrets, bearer and session tokens ' +
          'and the user-info of URLs, are replaced by `"[redacted]"`. Null for a success, or ' +
          'without a JSON body.',
      },
    ),
  ),
  requestBodyTruncated: Type.Optional(
    Type.Boolean({
      description:
        `\`getRequest\` only. The body was longer than ${BODY_MAX_BYTES / 1024} KB: ` +
        '`requestBody` is its start, cut on a character boundary (so not valid JSON).',
    }),
  ),
  errorBody: Type.Optional(
    Type.Union([ErrorBody, Type.Null()], {
      description: '`getRequest` only. For a 4xx or 5xx answer, the Error answered; else null.',
    }),
  ),
};

export const RequestLogEntry = ClosedObject(
  { ...entryFields, ...errorFields },
  {
    title: 'RequestLogEntry',
    description:
      'An API request of the account, as it was answered; `getRequest` adds the bodies of an ' +
      'error.',
    examples: [
      {
        ...ENTRY_EXAMPLE,
        requestBody: '{"name":"","categoryId":1,"apiKey":"[redacted]"}',
        requestBodyTruncated: false,
        errorBody: {
          code: 'validation_failed',
          message: 'Invalid body/name: must NOT have fewer than 1 characters.',
          status: 400,
        },
      },
    ],
  },
);

export const RequestLogPage = Page(RequestLogEntry, {
  title: 'RequestLogPage',
  description: 'A page of requests, newest first; the next page is in the `Link` header.',
  examples: [[ENTRY_EXAMPLE]],
});

export const RequestListQuery = ListQuery({
  status: Type.Optional(
    StringEnum(STATUS_FILTERS, {
      description:
        'Only this status (`404`), or this class (`2xx`, `4xx`, `5xx`; `4xx` includes `429`).',
      examples: ['4xx'],
    }),
  ),
  keyId: Type.Optional(IdParam('Only the requests made with this key (`key_…`).')),
  method: Type.Optional(StringEnum(METHODS, { description: 'Only this method.' })),
  path: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 2048,
      pattern: STORABLE_TEXT_PATTERN,
      description: 'Only this path, exactly (`/v1/pets/7`).',
    }),
  ),
});

export const RequestParams = Type.Object({ requestId: RequestId });

const counts = {
  status2xx: Count('2xx answers.'),
  status4xx: Count('4xx answers but 429.'),
  status5xx: Count('5xx answers.'),
  status429: Count('429 answers.'),
};

export const RequestCounts = ClosedObject(counts, {
  title: 'RequestCounts',
  description: 'Requests by their answer: 2xx, 4xx (429 apart), 5xx and 429.',
  examples: [{ status2xx: 120, status4xx: 3, status5xx: 0, status429: 1 }],
});

const HOUR_EXAMPLE = {
  hour: '2026-11-24T12:00:00.000Z',
  status2xx: 120,
  status4xx: 3,
  status5xx: 0,
  status429: 1,
};

export const StatsPeriod = StringEnum(
  Object.keys(STATS_PERIODS) as Array<keyof typeof STATS_PERIODS>,
  {
    description: 'The last 24 hours (`24h`) or 7 days (`7d`), each ending with the current hour.',
  },
);

export const RequestStats = ClosedObject(
  {
    period: StatsPeriod,
    from: Timestamp("The first hour's start (UTC)."),
    to: Timestamp("The current hour's end (UTC)."),
    hours: Type.Array(
      Type.Object(
        { hour: Timestamp("The hour's start (UTC)."), ...counts },
        { additionalProperties: false },
      ),
      {
        maxItems: STATS_PERIODS['7d'],
        description: 'Every hour of the period, oldest first; an hour without requests is zeros.',
      },
    ),
    totals: { ...RequestCounts, description: "The period's requests." },
  },
  {
    title: 'RequestStats',
    description:
      "The account's API requests per hour, by status class: counted as they are logged, " +
      'kept 7 days.',
    examples: [
      {
        period: '24h',
        from: '2026-11-23T13:00:00.000Z',
        to: '2026-11-24T13:00:00.000Z',
        hours: [HOUR_EXAMPLE],
        totals: { status2xx: 120, status4xx: 3, status5xx: 0, status429: 1 },
      },
    ],
  },
);

export const StatsQuery = Type.Object(
  { period: Type.Optional({ ...StatsPeriod, default: '7d' }) },
  { additionalProperties: false },
);
