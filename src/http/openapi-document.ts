import { isDeepStrictEqual } from 'node:util';
import type { TSchema } from 'typebox';
import { isPublishableScope } from '../domain/api-keys.js';
import { ERRORS, type ErrorCode, withNextStep } from '../errors.js';
import { BASIC_ERRORS, BEARER_ERRORS, byStatus } from './operation.js';
import {
  AccountView,
  ApiKeyList,
  ApiKeyView,
  CreatedAccount,
  CreatedApiKey,
  NewAccount,
  NewApiKey,
} from './schemas/accounts.js';
import {
  describeCodes,
  ERROR_CODES_KEY,
  ErrorBody,
  ErrorDetail,
  HEADER_KEY,
} from './schemas/common.js';
import { declaredScope } from './scopes.js';

/**
 * The finishing step of the OpenAPI document (@fastify/swagger's `transformObject`): the route
 * schemas come in inlined, as Fastify uses them; what goes out names each of them once.
 *
 * - Every schema with a `title` becomes `#/components/schemas/<title>`, referenced with `$ref`
 *   wherever it is used. The component is the schema itself (COMPONENTS, and those each
 *   capability declares); a use that differs from it (other than in its description) stops the
 *   document being made, so two schemas can never share a name.
 * - Error responses are built from the codes each operation names (src/http/operation.ts): a
 *   description listing them, the Error schema, one example per code. Those alike in every
 *   operation are shared responses (SHARED_RESPONSES).
 * - Rate-limit headers on every response, `required` where they are always sent.
 * - `Idempotency-Key` on every POST, with its three errors and `Idempotent-Replayed`.
 * - An example on every request body and every response with a body.
 */

/** The named schemas: the component of each title. Nested titled schemas are found in them. */
const COMPONENTS: TSchema[] = [
  NewAccount,
  CreatedAccount,
  AccountView,
  ApiKeyView,
  ApiKeyList,
  NewApiKey,
  CreatedApiKey,
  ErrorBody,
  ErrorDetail,
];

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A schema object with a title names a component (response and parameter objects have none). */
const isNamedSchema = (value: Json): value is Json & { title: string } =>
  typeof value.title === 'string' &&
  ('type' in value || 'enum' in value || 'anyOf' in value || 'const' in value);

/** What is allowed to differ between a use of a named schema and its component. */
const USE_SITE_KEYS = new Set(['title', 'description', 'examples', 'default', ERROR_CODES_KEY]);

class SchemaNames {
  readonly schemas: Record<string, Json> = {};
  /** Each component without its descriptions, to compare uses with. */
  private readonly shapes = new Map<string, unknown>();

  constructor(components: readonly TSchema[]) {
    const plain: Json[] = [];
    // The components, and the named schemas nested in them.
    const collect = (value: unknown): void => {
      if (Array.isArray(value)) value.forEach(collect);
      if (!isObject(value)) return;
      if (isNamedSchema(value) && !plain.some((s) => s.title === value.title)) plain.push(value);
      Object.values(value).forEach(collect);
    };
    collect(JSON.parse(JSON.stringify(components)));
    // Every component first, without checking the ones nested in others; then each checked.
    for (const schema of plain) {
      const { title, ...rest } = schema as { title: string };
      const body = this.hoistChildren(rest, false);
      this.schemas[title] = { title, ...body };
      this.shapes.set(title, shapeOf(body));
    }
    for (const schema of plain) this.hoist(schema);
  }

  /** `value` with every named schema in it replaced by its `$ref`. */
  hoist(value: unknown, check = true): unknown {
    if (Array.isArray(value)) return value.map((item) => this.hoist(item, check));
    if (!isObject(value)) return value;
    if (isNamedSchema(value)) {
      const { title } = value;
      if (check) {
        if (!this.shapes.has(title)) {
          throw new Error(`the schema titled ${title} is not a component (openapi-document.ts)`);
        }
        const use = shapeOf(this.hoistChildren(value, check));
        if (!isDeepStrictEqual(use, this.shapes.get(title))) {
          throw new Error(`a schema titled ${title} differs from its component`);
        }
      }
      return { $ref: schemaRef(title) };
    }
    return this.hoistChildren(value, check);
  }

  private hoistChildren(value: Json, check: boolean): Json {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, this.hoist(v, check)]));
  }

  /** The first example of a component, following `$ref`. */
  example(schema: unknown): unknown {
    if (!isObject(schema)) return undefined;
    const ref = typeof schema.$ref === 'string' ? schema.$ref : undefined;
    const target = ref ? this.schemas[ref.slice(SCHEMA_PREFIX.length)] : schema;
    const examples = target?.examples;
    return Array.isArray(examples) ? examples[0] : undefined;
  }
}

function shapeOf(schema: Json): unknown {
  const strip = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(strip);
    if (!isObject(value)) return value;
    return Object.fromEntries(
      Object.entries(value)
        .filter(([key]) => !USE_SITE_KEYS.has(key))
        .map(([key, v]) => [key, strip(v)]),
    );
  };
  return strip(schema);
}

const SCHEMA_PREFIX = '#/components/schemas/';
const schemaRef = (name: string) => `${SCHEMA_PREFIX}${name}`;

// ---------------------------------------------------------------------------------------------
// Headers

const RATE_LIMIT_HEADERS: Record<string, { description: string; schema: Json; example: unknown }> =
  {
    'X-RateLimit-Limit': {
      description: 'Requests allowed in the window with the fewest requests left.',
      schema: { type: 'integer', format: 'int32', minimum: 0, maximum: 2_147_483_647 },
      example: 60,
    },
    'X-RateLimit-Remaining': {
      description: 'Requests left in that window.',
      schema: { type: 'integer', format: 'int32', minimum: 0, maximum: 2_147_483_647 },
      example: 59,
    },
    'X-RateLimit-Reset': {
      description: 'Unix time (seconds) at which that window refills.',
      schema: { type: 'integer', format: 'int64', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
      example: 1767607260,
    },
    'RateLimit-Policy': {
      description:
        'Both windows, as `"minute";q=60;w=60, "day";q=1000;w=86400` ' +
        '(IETF draft-ietf-httpapi-ratelimit-headers).',
      schema: { type: 'string', maxLength: 256, pattern: '^[ -~]*$' },
      example: '"minute";q=60;w=60, "day";q=1000;w=86400',
    },
    RateLimit: {
      description: 'That window now, as `"minute";r=59;t=37` (IETF draft).',
      schema: { type: 'string', maxLength: 256, pattern: '^[ -~]*$' },
      example: '"minute";r=59;t=37',
    },
  };

/**
 * Statuses whose answers always carry the rate-limit headers: those made after the request was
 * counted, which every operation does first (src/http/auth.ts), before its body is read. They
 * are optional on the others: a 400 may be the refusal of a malformed `Host` header, made
 * before anything else (src/plugins/requests.ts); a 500 or 503 may come before the count (the
 * key or limit store unreachable). While the limit store is away and
 * `RATE_LIMIT_ON_STORE_ERROR=open` lets requests through uncounted, no answer carries them.
 */
const COUNTED_STATUS = /^(2\d\d|401|404|409|410|413|422|429)$/;

const OPTIONAL_SUFFIX = '-IfCounted';

/** Headers routes name (`documentedHeaders`), and those every answer may carry. */
const OTHER_HEADERS: Record<string, Json> = {
  Link: {
    description:
      'RFC 8288 link to the next page, `<…>; rel="next"`; absent on the last page. Follow it ' +
      'as given: cursors are opaque.',
    schema: { type: 'string', maxLength: 2048, pattern: '^<[^>]+>; rel="next"$' },
    example: '<https://api.example.com/v1/pets?limit=20&cursor=azEuMjA>; rel="next"',
  },
  Location: {
    description: 'The absolute URL of what was created.',
    required: true,
    schema: { type: 'string', format: 'uri', maxLength: 2048 },
    example: 'https://api.example.com/v1/pets/1',
  },
  Deprecation: {
    description: 'RFC 9745: when the operation was deprecated, as `@<Unix seconds>`.',
    required: true,
    schema: { type: 'string', maxLength: 24, pattern: '^@[0-9]+$' },
    example: '@1767225600',
  },
  Sunset: {
    description: 'RFC 8594: when the operation is removed (an HTTP date); `410` from then on.',
    required: true,
    schema: {
      type: 'string',
      maxLength: 40,
      pattern: '^[A-Z][a-z]{2}, [0-9]{2} [A-Z][a-z]{2} [0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2} GMT$',
    },
    example: 'Thu, 05 Dec 2030 00:00:00 GMT',
  },
  DeprecationLink: {
    description:
      'The replacement (`rel="successor-version"`, the same pet through `GET /v1/pets?id=`) ' +
      'and the notice (`rel="deprecation"`).',
    required: true,
    schema: { type: 'string', maxLength: 2048, pattern: '^<[^>]+>; rel="' },
    example:
      '<https://api.example.com/v1/pets?id=7>; rel="successor-version", ' +
      '<https://api.example.com/docs/#deprecations>; rel="deprecation"',
  },
  'Retry-After': {
    description: 'Seconds to wait before sending again (RFC 9110 §10.2.3).',
    schema: { type: 'integer', format: 'int32', minimum: 0, maximum: 86_400 },
    example: 30,
  },
  'Idempotent-Replayed': {
    description:
      'Present (`true`) when this is the kept answer to an earlier request with the same ' +
      '`Idempotency-Key`, not a new effect.',
    schema: { type: 'string', enum: ['true'] },
    example: 'true',
  },
};

function headerComponents(): Record<string, Json> {
  const headers: Record<string, Json> = {};
  for (const [name, header] of Object.entries(RATE_LIMIT_HEADERS)) {
    headers[name] = { ...header, required: true };
    headers[`${name}${OPTIONAL_SUFFIX}`] = {
      ...header,
      description: `${header.description} Sent when the request was counted.`,
    };
  }
  return { ...headers, ...OTHER_HEADERS };
}

const headerRef = (name: string) => ({ $ref: `#/components/headers/${name}` });

function rateLimitHeaders(status: string): Record<string, Json> {
  const suffix = COUNTED_STATUS.test(status) ? '' : OPTIONAL_SUFFIX;
  return Object.fromEntries(
    Object.keys(RATE_LIMIT_HEADERS).map((name) => [name, headerRef(`${name}${suffix}`)]),
  );
}

// ---------------------------------------------------------------------------------------------
// Idempotency-Key (src/http/idempotency.ts)

const IDEMPOTENCY_PARAMETER = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    'Makes a retry safe: send a new unique value (a UUID) with each new request, and the same ' +
    'value when retrying it. Within 24 hours, the same key with the same request (method, path, ' +
    'body) is answered with the first answer, `Idempotent-Replayed: true`, and nothing is done ' +
    'again; with another request it answers `422 idempotency_key_mismatch`, and while the first ' +
    'is still running `409 idempotency_key_in_use` with `Retry-After`. Only successes are ' +
    'kept: a refused request may be sent again with its key. 1 to 255 printable ASCII ' +
    'characters (else `400 invalid_idempotency_key`). Keys are per account (per client address ' +
    'for sign-up), and a kept answer is given again only to the credential that sent it (the ' +
    'same API key; for `/v1/keys`, the account password): another gets `409 ' +
    'idempotency_key_in_use` without `Retry-After`.',
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[ -~]{1,255}$' },
  example: '8e03978e-40d5-43e8-bc93-6894a57f9324',
};

const IDEMPOTENCY_CODES: ErrorCode[] = [
  'invalid_idempotency_key',
  'idempotency_key_in_use',
  'idempotency_key_mismatch',
];

// ---------------------------------------------------------------------------------------------
// Error responses

/** Error responses alike wherever they appear, by the codes they stand for. */
const SHARED_RESPONSES: Record<string, ErrorCode[]> = {
  Unauthorized: BEARER_ERRORS,
  BasicUnauthorized: BASIC_ERRORS,
  InsufficientScope: ['insufficient_scope'],
  NotForThisKey: ['insufficient_scope', 'origin_not_allowed'],
  NotFound: ['not_found'],
  Gone: ['endpoint_removed'],
  IdempotencyKeyMismatch: ['idempotency_key_mismatch'],
  TooManyRequests: ['rate_limited', 'key_banned'],
  InternalError: ['internal_error'],
  ServiceUnavailable: ['service_unavailable'],
  WriteUnavailable: ['service_unavailable', 'outcome_unknown'],
};

/** An example message for each code: its meaning in the error table, unless said here; then,
 * as in every answer, its next step. */
const EXAMPLE_MESSAGES: Partial<Record<ErrorCode, string>> = {
  validation_failed: 'Invalid body/status: must be one of: available, pending, sold.',
  rate_limited:
    'Rate limit of 60 requests per minute exceeded; retry in 23 s. Back off exponentially: ' +
    'requests sent while limited can get the key banned.',
  not_found: 'No pet 7 in this account; list its pets with `GET /v1/pets`.',
};

function errorExample(code: ErrorCode): Json {
  const { status, description } = ERRORS[code];
  const message = withNextStep(code, EXAMPLE_MESSAGES[code] ?? description);
  const value: Json = { code, message, status };
  if (code === 'validation_failed') {
    value.details = [
      { location: 'body/status', message: 'must be one of: available, pending, sold' },
    ];
  }
  return { summary: code, value };
}

function errorResponse(status: string, codes: readonly ErrorCode[]): Json {
  const headers: Json = { ...rateLimitHeaders(status) };
  if (status === '429')
    headers['Retry-After'] = { ...OTHER_HEADERS['Retry-After'], required: true };
  else if (status === '503' || codes.includes('idempotency_key_in_use')) {
    headers['Retry-After'] = headerRef('Retry-After');
  }
  return {
    description: describeCodes(codes),
    headers,
    content: {
      'application/json': {
        schema: { $ref: schemaRef('Error') },
        examples: Object.fromEntries(codes.map((code) => [code, errorExample(code)])),
      },
    },
  };
}

function sharedResponseOf(codes: readonly ErrorCode[]): string | undefined {
  const key = [...codes].sort().join();
  return Object.keys(SHARED_RESPONSES).find(
    (name) => [...(SHARED_RESPONSES[name] ?? [])].sort().join() === key,
  );
}

function sharedResponses(): Record<string, Json> {
  const responses: Record<string, Json> = {};
  for (const [name, codes] of Object.entries(SHARED_RESPONSES)) {
    const status = String(ERRORS[codes[0] as ErrorCode].status);
    responses[name] = errorResponse(status, codes);
  }
  return responses;
}

// ---------------------------------------------------------------------------------------------
// Operations

interface Operation extends Json {
  description?: string;
  security?: Array<Record<string, string[]>>;
  parameters?: Json[];
  requestBody?: Json & { content?: Record<string, Json> };
  responses?: Record<string, Json>;
}

const METHODS = ['get', 'put', 'post', 'patch', 'delete'];

/** Marks a body that may be left out (set by the route transform, read here). */
export const OPTIONAL_BODY_KEY = 'x-optional-body';

function finishOperation(names: SchemaNames, method: string, operation: Operation): void {
  const post = method === 'post';
  if (post) {
    operation.parameters = [
      ...(operation.parameters ?? []),
      { $ref: '#/components/parameters/IdempotencyKey' },
    ];
  }
  const body = operation.requestBody?.content?.['application/json'];
  if (operation.requestBody && body) {
    const optional = isObject(body.schema) && body.schema[OPTIONAL_BODY_KEY] === true;
    if (optional) {
      delete (body.schema as Json)[OPTIONAL_BODY_KEY];
      operation.requestBody.required = false;
    }
    body.schema = names.hoist(body.schema);
    body.example = names.example(body.schema);
  }

  const responses = operation.responses ?? {};
  // The codes of each error status, then those every operation of its kind may answer added.
  const codes = new Map<string, ErrorCode[]>();
  for (const [status, response] of Object.entries(responses)) {
    const schema = (response.content as Record<string, Json> | undefined)?.['application/json']
      ?.schema as Json | undefined;
    const listed = schema?.[ERROR_CODES_KEY];
    if (Array.isArray(listed)) codes.set(status, [...(listed as ErrorCode[])]);
  }
  // A restricted key without the operation's scope is refused (src/http/scopes.ts), and the
  // docs page says which scope that is.
  const scope = declaredScope(operation);
  if (scope !== undefined) {
    const note =
      `Scope: \`${scope}\` (a restricted key needs it` +
      `${scope.endsWith(':read') ? ", or the same resource's `write`" : ''}).`;
    operation.description = operation.description ? `${operation.description}\n\n${note}` : note;
  }
  // Every write may commit and not be confirmed (a failed disk sync, a lost COMMIT answer).
  const added: ErrorCode[] = [
    ...(post ? IDEMPOTENCY_CODES : []),
    ...(method === 'get' ? [] : (['outcome_unknown'] as const)),
    ...(scope === undefined ? [] : (['insufficient_scope'] as const)),
    // What a publishable key may call, it may be sent from the wrong page (src/http/browser-access.ts).
    ...(isPublishableScope(scope) ? (['origin_not_allowed'] as const) : []),
  ];
  byStatus(added, codes);

  const finished: Record<string, Json> = {};
  const statuses = [...new Set([...Object.keys(responses), ...codes.keys()])].sort();
  for (const status of statuses) {
    const list = codes.get(status);
    if (list) {
      const shared = sharedResponseOf(list);
      finished[status] = shared
        ? { $ref: `#/components/responses/${shared}` }
        : errorResponse(status, list);
      continue;
    }
    const response = responses[status] as Json;
    const headers: Json = {
      ...(response.headers as Json | undefined),
      ...rateLimitHeaders(status),
    };
    if (post && status.startsWith('2')) {
      headers['Idempotent-Replayed'] = headerRef('Idempotent-Replayed');
    }
    response.headers = Object.fromEntries(
      Object.entries(headers).map(([name, header]) => {
        const component = (header as { schema?: Json }).schema?.[HEADER_KEY];
        if (typeof component !== 'string') return [name, header];
        const sent = component === 'DeprecationLink' ? 'Link' : component;
        return [sent, headerRef(component)];
      }),
    );
    const json = (response.content as Record<string, Json> | undefined)?.['application/json'];
    if (json) {
      json.schema = names.hoist(json.schema);
      json.example = names.example(json.schema);
    }
    finished[status] = response;
  }
  operation.responses = finished;
}

/** `pet.created` → `PetCreated`, `webhook-id` → `WebhookId`. */
const pascal = (name: string) =>
  name.replace(/(^|[._-])([a-z])/g, (_, _separator, c: string) => c.toUpperCase());

/** The delivery headers as parameters (`#/components/parameters/WebhookSignatureHeader`…). */
function deliveryHeaders(headers: DocumentParts['deliveryHeaders']): Record<string, Json> {
  return Object.fromEntries(
    Object.entries(headers).map(([header, description]) => [
      `${pascal(header)}Header`,
      {
        name: header,
        in: 'header',
        required: true,
        description,
        schema: { type: 'string', maxLength: 1024, pattern: '^[\\x20-\\x7E]+$' },
      },
    ]),
  );
}

/**
 * `Event` as one of a schema per event type, told apart by `type`, each with its `data`'s own
 * schema; and the OpenAPI 3.1 `webhooks` section: each type's delivery, its body and headers.
 * The route schemas keep `data` open (it is the resource as its own operations answer it);
 * the document says which resource each type carries.
 */
function eventsByType(names: SchemaNames, { events, deliveryHeaders }: DocumentParts): Json {
  const base = names.schemas.Event as Json & { properties: Json; required: string[] };
  const mapping: Record<string, string> = {};
  const webhooks: Record<string, Json> = {};
  for (const [type, data] of Object.entries(events)) {
    const name = `${pascal(type)}Event`;
    const hoisted = names.hoist(data);
    const description = `A \`${type}\` event: its \`data\` is a ${String((data as Json).title)}.`;
    names.schemas[name] = {
      title: name,
      description,
      type: 'object',
      additionalProperties: false,
      required: base.required,
      properties: {
        ...base.properties,
        type: { type: 'string', const: type, description: 'What happened.' },
        data: hoisted,
      },
      examples: [{ ...(names.example(base) as Json), type, data: names.example(hoisted) }],
    };
    mapping[type] = schemaRef(name);
    webhooks[type] = {
      post: {
        summary: `${type} delivery`,
        description:
          `${description} POSTed to each enabled endpoint that wants \`${type}\`, signed; ` +
          'answer 2xx within the timeout, or it is retried with back-off.',
        tags: ['Webhooks'],
        parameters: Object.keys(deliveryHeaders).map((header) => ({
          $ref: `#/components/parameters/${pascal(header)}Header`,
        })),
        requestBody: {
          required: true,
          content: { 'application/json': { schema: { $ref: schemaRef(name) } } },
        },
        responses: {
          '200': { description: 'Received (any 2xx will do); anything else is retried.' },
        },
      },
    };
  }
  names.schemas.Event = {
    title: 'Event',
    description: base.description,
    examples: base.examples,
    oneOf: Object.values(mapping).map(($ref) => ({ $ref })),
    discriminator: { propertyName: 'type', mapping },
  };
  return webhooks;
}

/** The quickstart endpoint has its own base address, without the /v1 prefix (seed). */
function withMessagesServer(paths: Record<string, Json>, url: string): void {
  for (const [path, item] of Object.entries(paths)) {
    if (path.startsWith('/messages')) {
      item.servers = [
        { url, description: 'Quickstart messages (production, or local in development)' },
      ];
    }
  }
}

/**
 * Parameters used alike by several operations (`limit`, `cursor`, the path ids) become
 * `#/components/parameters/<Name>`; one used by a single operation, or differently by two,
 * stays where it is.
 */
function shareParameters(operations: Operation[]): Record<string, Json> {
  const nameOf = ({ name }: Json) =>
    typeof name === 'string' ? `${name[0]?.toUpperCase()}${name.slice(1)}` : '';
  const uses = new Map<string, { parameter: Json; count: number; alike: boolean }>();
  for (const operation of operations) {
    for (const parameter of operation.parameters ?? []) {
      if (typeof parameter.name !== 'string' || typeof parameter.in !== 'string') continue;
      const name = nameOf(parameter);
      const seen = uses.get(name);
      if (!seen) uses.set(name, { parameter, count: 1, alike: true });
      else {
        seen.count++;
        seen.alike &&= isDeepStrictEqual(seen.parameter, parameter);
      }
    }
  }
  const shared: Record<string, Json> = {};
  for (const [name, { parameter, count, alike }] of uses) {
    if (count > 1 && alike) shared[name] = parameter;
  }
  for (const operation of operations) {
    operation.parameters = operation.parameters?.map((parameter) => {
      const name = nameOf(parameter);
      return shared[name] && isDeepStrictEqual(shared[name], parameter)
        ? { $ref: `#/components/parameters/${name}` }
        : parameter;
    });
  }
  return shared;
}

/**
 * Every union in `schemas` says its `type` (Scalar's document check refuses a schema of
 * `anyOf`/`oneOf` without one; issue 54): a value or null, `anyOf: [{type: T, …}, {type:
 * "null"}]`, becomes `{type: [T, "null"], …}`, OpenAPI 3.1's own way to write it; any other
 * union (of a `$ref` and null, of event types) gets the types of its branches, a `$ref` the
 * type of the schema it names.
 */
function typedUnions(schemas: Record<string, Json>): void {
  const typeOf = (branch: Json): unknown[] | undefined => {
    const target =
      typeof branch.$ref === 'string' ? schemas[branch.$ref.slice(SCHEMA_PREFIX.length)] : branch;
    const type = target?.type;
    return type === undefined ? undefined : [type].flat();
  };
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(visit);
    if (!isObject(value)) return;
    Object.values(value).forEach(visit);
    const branches = (value.anyOf ?? value.oneOf) as Json[] | undefined;
    if (!Array.isArray(branches) || value.type !== undefined) return;
    const [first, second] = branches;
    if (
      value.anyOf &&
      branches.length === 2 &&
      second?.type === 'null' &&
      typeof first?.type === 'string'
    ) {
      const { anyOf: _, ...rest } = value;
      for (const key of Object.keys(value)) delete value[key];
      Object.assign(value, { ...first, ...rest, type: [first.type, 'null'] });
      return;
    }
    const types = branches.map(typeOf);
    if (types.every((type) => type !== undefined)) {
      const all = [...new Set(types.flat())];
      value.type = all.length === 1 ? all[0] : all;
    }
  };
  Object.values(schemas).forEach(visit);
}

/** What the capabilities add to the document (src/capability.ts). */
export interface DocumentParts {
  /** Their titled schemas, named beside the core's. */
  readonly components: readonly TSchema[];
  /** Their events, by type, with the schema of their `data`. */
  readonly events: Readonly<Record<string, TSchema>>;
  /** The headers each webhook delivery carries, by name, with what each holds. */
  readonly deliveryHeaders: Readonly<Record<string, string>>;
}

const NO_PARTS: DocumentParts = { components: [], events: {}, deliveryHeaders: {} };

/** The document as served: see the comment at the top of this file. */
export function finishDocument<T>(document: T, messagesUrl: string, parts = NO_PARTS): T {
  const { components, events } = parts;
  const doc = document as Json & {
    paths?: Record<string, Json>;
    components?: Json;
    webhooks?: Json;
  };
  const names = new SchemaNames([...COMPONENTS, ...components, ...Object.values(events)]);
  const paths = doc.paths ?? {};
  const operations: Array<[method: string, operation: Operation]> = [];
  for (const item of Object.values(paths)) {
    for (const method of METHODS) {
      const operation = item[method];
      if (isObject(operation)) operations.push([method, operation]);
    }
  }
  for (const [, operation] of operations) {
    for (const parameter of operation.parameters ?? []) {
      parameter.schema = names.hoist(parameter.schema);
    }
  }
  const parameters = shareParameters(operations.map(([, operation]) => operation));
  for (const [method, operation] of operations) finishOperation(names, method, operation);
  withMessagesServer(paths, messagesUrl);
  if (names.schemas.Event && Object.keys(events).length > 0) {
    doc.webhooks = eventsByType(names, parts);
  }
  typedUnions(names.schemas);
  doc.components = {
    ...doc.components,
    schemas: names.schemas,
    responses: sharedResponses(),
    parameters: {
      ...parameters,
      IdempotencyKey: IDEMPOTENCY_PARAMETER,
      ...(doc.webhooks && deliveryHeaders(parts.deliveryHeaders)),
    },
    headers: headerComponents(),
  };
  return document;
}
