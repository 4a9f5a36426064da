/**
 * Property-based fuzzing (fast-check) of every operation in the OpenAPI document the service
 * serves. The operations are read from the document, so one added later is fuzzed without
 * touching this file; one the fuzzer cannot describe (a cookie parameter, a body that is not
 * JSON, a JSON-schema keyword it does not know) fails loudly instead of being skipped.
 *
 * Each request is generated from the operation's parameter and body schemas, then bent: path
 * ids of the caller, of another account and made up (huge, negative, unicode, percent-encoded,
 * raw), query values of each parameter plus junk and unknown keys, credentials (each tenant's,
 * none, revoked, garbage), bodies valid by the schema, broken field by field, or not JSON at
 * all (deep nesting, invalid text, bytes that are not UTF-8). Every answer must be below 500; a
 * 4xx must be the Error body `{code, message, status, details?}` with a code of the error
 * table and its status; what one account owns never reaches another (tenants A and B, with
 * names like `secret-A-<uuid>`); and a request with valid credentials under the API is counted
 * (`X-RateLimit-Limit`). A third account, the bystander, never sends a fuzzed request: its ids
 * are aimed at by both tenants, and at the end its data must be as it was.
 *
 * Each run sends a batch of 1 to 4 requests at once (sometimes the same one twice: a race).
 * FUZZ_SEED sets the seed (a fixed one by default, `random` for a new one each run), FUZZ_RUNS
 * the runs per operation (25; fewer where every request hashes a password). On a failure
 * fast-check prints the seed and the shrunk batch; raise FUZZ_RUNS to search longer.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { createApiKey, revokeKey, secretKey } from '../src/domain/api-keys.js';
import { ERRORS, saysNextStep } from '../src/errors.js';
import {
  as,
  basic,
  createCategory,
  createPet,
  freshIp,
  newTenant,
  nextLinkUrl,
  startApp,
  type Tenant,
} from './helpers.js';

const SEED =
  process.env.FUZZ_SEED === 'random'
    ? Math.floor(Math.random() * 2 ** 31)
    : Number(process.env.FUZZ_SEED ?? 20_240_601);
/** Runs per operation, each a batch of 1 to 4 requests sent at once. */
const RUNS = Number(process.env.FUZZ_RUNS ?? 25);
/** Fewer where each request hashes a password (~50-150 ms: key management); sign-up hashes
 * only when the body is valid. */
const runs: Record<Auth, number> = {
  bearer: RUNS,
  basic: Math.max(3, Math.round(RUNS / 5)),
  none: Math.max(3, Math.round(RUNS / 3)),
};

// ---------------------------------------------------------------------------------------------
// The OpenAPI document, as far as the fuzzer reads it

interface JsonSchema {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  enum?: unknown[];
  const?: unknown;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number | boolean;
  exclusiveMaximum?: number | boolean;
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  nullable?: boolean;
}

interface Parameter {
  $ref?: string;
  name: string;
  in: string;
  required?: boolean;
  schema?: JsonSchema;
}

interface OperationObject {
  operationId?: string;
  parameters?: Parameter[];
  requestBody?: {
    $ref?: string;
    required?: boolean;
    content?: Record<string, { schema?: JsonSchema }>;
  };
  security?: Array<Record<string, string[]>>;
}

interface OpenApiDocument {
  servers?: Array<{ url: string }>;
  security?: Array<Record<string, string[]>>;
  paths: Record<string, Record<string, unknown>>;
  components?: {
    schemas?: Record<string, JsonSchema>;
    parameters?: Record<string, Parameter>;
    securitySchemes?: Record<string, { type: string; scheme?: string }>;
  };
}

type Auth = 'bearer' | 'basic' | 'none';

interface Operation {
  /** operationId, or `METHOD path`. */
  key: string;
  method: string;
  /** The path with its server's prefix (`/v1`, or none for the quickstart messages). */
  path: string;
  pathParams: Parameter[];
  queryParams: Parameter[];
  headerParams: Parameter[];
  body: JsonSchema | undefined;
  auth: Auth;
}

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const PATH_ITEM_FIELDS = new Set(['servers', 'summary', 'description', 'parameters']);

/** `#/components/...` inside the document. */
function deref<T extends { $ref?: string }>(doc: OpenApiDocument, value: T): T {
  if (value.$ref === undefined) return value;
  if (!value.$ref.startsWith('#/')) throw new Error(`the fuzzer cannot follow ${value.$ref}`);
  let node: unknown = doc;
  for (const part of value.$ref.slice(2).split('/')) {
    node = (node as Record<string, unknown> | undefined)?.[part.replace(/~1/g, '/')];
  }
  if (node === undefined) throw new Error(`${value.$ref} names nothing in the document`);
  return deref(doc, node as T);
}

function authOf(doc: OpenApiDocument, op: OperationObject, label: string): Auth {
  const requirements = op.security ?? doc.security ?? [];
  const kinds = new Set<Auth>();
  for (const requirement of requirements) {
    const names = Object.keys(requirement);
    if (names.length === 0) kinds.add('none');
    for (const name of names) {
      const scheme = doc.components?.securitySchemes?.[name];
      if (scheme?.type === 'http' && scheme.scheme?.toLowerCase() === 'bearer') kinds.add('bearer');
      else if (scheme?.type === 'http' && scheme.scheme?.toLowerCase() === 'basic') {
        kinds.add('basic');
      } else throw new Error(`${label}: the fuzzer does not know the security scheme ${name}`);
    }
  }
  if (kinds.size === 0) return 'none';
  if (kinds.size > 1) throw new Error(`${label}: several security schemes; teach the fuzzer`);
  return [...kinds][0] as Auth;
}

/** Every path × method of the document. */
function operationsOf(doc: OpenApiDocument): Operation[] {
  const operations: Operation[] = [];
  for (const [template, item] of Object.entries(doc.paths)) {
    for (const field of Object.keys(item)) {
      if (!HTTP_METHODS.includes(field) && !PATH_ITEM_FIELDS.has(field)) {
        throw new Error(`${template}: the fuzzer does not know the path item field ${field}`);
      }
    }
    const servers = (item.servers as OpenApiDocument['servers']) ?? doc.servers ?? [{ url: '/' }];
    const prefix = new URL(servers[0]?.url ?? '/', 'http://localhost').pathname.replace(/\/$/, '');
    const shared = ((item.parameters as Parameter[] | undefined) ?? []).map((p) => deref(doc, p));
    for (const method of HTTP_METHODS) {
      const op = item[method] as OperationObject | undefined;
      if (op === undefined) continue;
      const key = op.operationId ?? `${method.toUpperCase()} ${template}`;
      const own = (op.parameters ?? []).map((p) => deref(doc, p));
      const params = [
        ...shared.filter((p) => !own.some((o) => o.name === p.name && o.in === p.in)),
        ...own,
      ];
      for (const p of params) {
        if (!['path', 'query', 'header'].includes(p.in)) {
          throw new Error(`${key}: the fuzzer does not send ${p.in} parameters (${p.name})`);
        }
      }
      let body: JsonSchema | undefined;
      if (op.requestBody) {
        const content = deref(doc, op.requestBody).content ?? {};
        const types = Object.keys(content);
        if (types.length !== 1 || types[0] !== 'application/json') {
          throw new Error(`${key}: the fuzzer only sends JSON bodies, not ${types.join(', ')}`);
        }
        body = content['application/json']?.schema ?? {};
      }
      operations.push({
        key,
        method: method.toUpperCase(),
        path: prefix + template,
        pathParams: params.filter((p) => p.in === 'path'),
        queryParams: params.filter((p) => p.in === 'query'),
        headerParams: params.filter((p) => p.in === 'header'),
        body,
        auth: authOf(doc, op, key),
      });
    }
  }
  return operations;
}

// ---------------------------------------------------------------------------------------------
// JSON schema → arbitrary, for the subset the document uses

const ANNOTATIONS = new Set([
  'title',
  'description',
  'default',
  'examples',
  'example',
  'deprecated',
  'readOnly',
  'writeOnly',
  '$id',
  '$schema',
  '$comment',
]);
const UNDERSTOOD = new Set([
  '$ref',
  'type',
  'properties',
  'required',
  'additionalProperties',
  'enum',
  'const',
  'minLength',
  'maxLength',
  'pattern',
  'format',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'items',
  'minItems',
  'maxItems',
  'anyOf',
  'oneOf',
  'nullable',
]);
/** Longest string generated freely; the bounds themselves are generated apart. */
const FREE_LENGTH = 40;

/** Values a field should often take, by its name (ids that exist…), or undefined. */
type Hints = (name: string) => fc.Arbitrary<unknown> | undefined;

function codePoints(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

function stringArbitrary(schema: JsonSchema): fc.Arbitrary<string> {
  const min = schema.minLength ?? 0;
  const max = schema.maxLength ?? min + FREE_LENGTH;
  let free: fc.Arbitrary<string>;
  // `password` only tells tools to hide the value: any text.
  const format = schema.format === 'password' ? undefined : schema.format;
  switch (format) {
    case undefined:
      free = fc.string({
        unit: 'grapheme',
        minLength: min,
        maxLength: Math.min(max, min + FREE_LENGTH),
      });
      break;
    case 'email':
      free = fc.emailAddress();
      break;
    case 'date-time':
      free = fc
        .date({ min: new Date(0), max: new Date('2100-01-01'), noInvalidDate: true })
        .map((d) => d.toISOString());
      break;
    case 'uuid':
      free = fc.uuid();
      break;
    case 'uri':
      free = fc.webUrl();
      break;
    default:
      throw new Error(`the fuzzer does not know the string format ${schema.format}`);
  }
  const bounds = format === undefined ? [min, max].map((n) => 'x'.repeat(n)) : [];
  const pattern = schema.pattern === undefined ? undefined : new RegExp(schema.pattern, 'u');
  // Strings made from the pattern too, where free text would seldom match it (an origin).
  if (pattern !== undefined && format === undefined) {
    free = fc.oneof(free, fc.stringMatching(pattern));
  }
  const arbitrary =
    bounds.length > 0
      ? fc.oneof(
          { weight: 9, arbitrary: free },
          { weight: 1, arbitrary: fc.constantFrom(...bounds) },
        )
      : free;
  return arbitrary.filter((s) => {
    const n = codePoints(s);
    return n >= min && n <= max && (pattern === undefined || pattern.test(s));
  });
}

function numberArbitrary(schema: JsonSchema, integer: boolean): fc.Arbitrary<number> {
  const exclusive = (bound: number | boolean | undefined, side: 1 | -1) =>
    typeof bound === 'number' ? bound + side * (integer ? 1 : Number.EPSILON) : undefined;
  let lo = exclusive(schema.exclusiveMinimum, 1) ?? schema.minimum;
  let hi = exclusive(schema.exclusiveMaximum, -1) ?? schema.maximum;
  if (schema.exclusiveMinimum === true && lo !== undefined) lo += integer ? 1 : Number.EPSILON;
  if (schema.exclusiveMaximum === true && hi !== undefined) hi -= integer ? 1 : Number.EPSILON;
  if (!integer) {
    return fc.double({
      noNaN: true,
      noDefaultInfinity: true,
      ...(lo !== undefined && { min: lo }),
      ...(hi !== undefined && { max: hi }),
    });
  }
  const min = Math.max(lo ?? Number.MIN_SAFE_INTEGER, Number.MIN_SAFE_INTEGER);
  const max = Math.min(hi ?? Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
  return fc.oneof(
    { weight: 8, arbitrary: fc.bigInt({ min: BigInt(min), max: BigInt(max) }).map(Number) },
    { weight: 1, arbitrary: fc.constantFrom(min, max) },
  );
}

/** Values valid by `schema`, its fields often taking the values `hints` gives for their name. */
function arbitraryOf(doc: OpenApiDocument, given: JsonSchema, hints: Hints): fc.Arbitrary<unknown> {
  const schema = deref(doc, given);
  for (const keyword of Object.keys(schema)) {
    if (!UNDERSTOOD.has(keyword) && !ANNOTATIONS.has(keyword) && !keyword.startsWith('x-')) {
      throw new Error(`the fuzzer does not know the JSON-schema keyword ${keyword}`);
    }
  }
  const plain = ((): fc.Arbitrary<unknown> => {
    if (schema.const !== undefined) return fc.constant(schema.const);
    if (schema.enum) return fc.constantFrom(...schema.enum);
    const alternatives = schema.anyOf ?? schema.oneOf;
    if (alternatives) return fc.oneof(...alternatives.map((s) => arbitraryOf(doc, s, hints)));
    const types = [schema.type ?? (schema.properties ? 'object' : 'any')].flat();
    return fc.oneof(
      ...types.map((type): fc.Arbitrary<unknown> => {
        switch (type) {
          case 'object': {
            const model: Record<string, fc.Arbitrary<unknown>> = {};
            for (const [name, property] of Object.entries(schema.properties ?? {})) {
              const hinted = hints(name);
              const own = arbitraryOf(doc, property, hints);
              model[name] = hinted
                ? fc.oneof({ weight: 3, arbitrary: hinted }, { weight: 1, arbitrary: own })
                : own;
            }
            const record = fc.record(model, { requiredKeys: schema.required ?? [] });
            const extra = schema.additionalProperties;
            if (extra === undefined || extra === false) return record;
            const values = extra === true ? fc.jsonValue() : arbitraryOf(doc, extra, hints);
            return fc
              .tuple(record, fc.dictionary(fc.string(), values, { maxKeys: 3 }))
              .map(([known, more]) => ({ ...more, ...known }));
          }
          case 'array':
            return fc.array(schema.items ? arbitraryOf(doc, schema.items, hints) : fc.jsonValue(), {
              minLength: schema.minItems ?? 0,
              maxLength: Math.min(schema.maxItems ?? 5, (schema.minItems ?? 0) + 5),
            });
          case 'string':
            return stringArbitrary(schema);
          case 'integer':
            return numberArbitrary(schema, true);
          case 'number':
            return numberArbitrary(schema, false);
          case 'boolean':
            return fc.boolean();
          case 'null':
            return fc.constant(null);
          case 'any':
            return fc.jsonValue();
          default:
            throw new Error(`the fuzzer does not know the JSON-schema type ${type}`);
        }
      }),
    );
  })();
  return schema.nullable ? fc.option(plain, { nil: null, freq: 10 }) : plain;
}

// ---------------------------------------------------------------------------------------------
// Junk

const PRINTABLE = fc.string({
  unit: fc
    .oneof(
      { weight: 9, arbitrary: fc.integer({ min: 0x20, max: 0x7e }) },
      { weight: 1, arbitrary: fc.integer({ min: 0x80, max: 0xff }) },
    )
    .map((c) => String.fromCharCode(c)),
  maxLength: 60,
});
/** Any Unicode, lone surrogates and control characters included. */
const UNICODE = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 30 }),
  fc.string({ unit: 'grapheme', maxLength: 30 }),
  fc.constantFrom(
    '\u0000',
    'a\u0000b',
    '\ud800',
    '\udfff',
    '\ufeff',
    '\u202e',
    'é',
    'e\u0301',
    '💥',
    '\r\n',
  ),
);
const ODD_NUMBERS = fc.constantFrom(
  '0',
  '-0',
  '-1',
  '1.5',
  '1e3',
  '1E+2',
  '0x10',
  '0b1',
  '+1',
  ' 1',
  '1 ',
  '01',
  '١',
  'NaN',
  'Infinity',
  '-Infinity',
  'null',
  'true',
  '[]',
  '{}',
  '9007199254740991',
  '9007199254740992',
  '18446744073709551616',
  '1'.repeat(400),
);
const HUGE = fc.bigInt({ min: 2n ** 53n, max: 2n ** 256n }).map(String);
const JUNK_VALUE = fc.oneof(
  { weight: 3, arbitrary: ODD_NUMBERS },
  { weight: 2, arbitrary: fc.integer().map(String) },
  { weight: 1, arbitrary: HUGE },
  { weight: 3, arbitrary: UNICODE },
  { weight: 2, arbitrary: PRINTABLE },
);
/** Percent-encodings, decodable or not. */
const PERCENT = fc
  .array(
    fc.oneof(
      { weight: 4, arbitrary: fc.integer({ min: 0, max: 255 }) },
      { weight: 1, arbitrary: fc.constantFrom('%', '%z', '%zz', '%%', '%0', '%u0041', 'a', '/') },
    ),
    { minLength: 1, maxLength: 8 },
  )
  .map((parts) =>
    parts
      .map((p) => (typeof p === 'number' ? `%${p.toString(16).padStart(2, '0').toUpperCase()}` : p))
      .join(''),
  );

/** encodeURIComponent, but a lone surrogate is sent as U+FFFD (as any UTF-8 encoder does)
 * instead of throwing. */
function encode(value: string): string {
  let out = '';
  for (const byte of Buffer.from(value, 'utf8')) {
    const char = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-_.!~*'()]/.test(char)
      ? char
      : `%${byte.toString(16).padStart(2, '0').toUpperCase()}`;
  }
  return out;
}

/** A value rendered into a URL: encoded as a client should, raw, or percent-junk. */
function inUrl(value: fc.Arbitrary<string>): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 8, arbitrary: value.map(encode) },
    { weight: 2, arbitrary: value },
    { weight: 2, arbitrary: PERCENT },
  );
}

/** A value of the wrong type or out of bounds, for any field. */
const WRONG_VALUE: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(
    null,
    true,
    false,
    0,
    -1,
    1.5,
    2 ** 53,
    -(2 ** 53),
    1e308,
    '',
    ' ',
    '1',
    'null',
    [],
    {},
    [1],
    { id: 1 },
    '\u0000',
    '\ud800',
    'x'.repeat(5000),
  ),
  fc.anything({ maxDepth: 2 }),
  UNICODE,
  fc.integer(),
);

const BROKEN_JSON = [
  ' ',
  '{',
  '}',
  '{"',
  '{"name"',
  '{"name":}',
  '{"name":"x",}',
  "{'name':'x'}",
  '{name:"x"}',
  '[',
  'nul',
  'NaN',
  '-',
  '01',
  '1e999',
  '"\\ud800"',
  '{"name":"\\ud800"}',
  '{"name":"\\u0000"}',
  '{"name":"\\x41"}',
  '{"name":"a\nb"}',
  '\ufeff{"name":"x"}',
  '{}garbage',
  '{}{}',
  '{"__proto__":{"polluted":true}}',
  '{"constructor":{"prototype":{"polluted":true}}}',
  '{"name":"a","name":{"__proto__":{}}}',
  '/* comment */{}',
  '{"name":"x"} // comment',
  'true',
  'null',
  '[]',
  '"text"',
  '123',
];

/** Nesting `depth` deep: arrays, objects, or inside a field of the body. */
function deep(field: string): fc.Arbitrary<string> {
  return fc
    .tuple(
      fc.oneof(fc.integer({ min: 1, max: 70_000 }), fc.constantFrom(1_000, 10_000, 60_000)),
      fc.constantFrom('array', 'object', 'field'),
    )
    .map(([depth, shape]) => {
      if (shape === 'array') return '['.repeat(depth) + ']'.repeat(depth);
      const objects = `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
      return shape === 'object' ? objects : `{${JSON.stringify(field)}:${objects}}`;
    });
}

// ---------------------------------------------------------------------------------------------
// The accounts

type PartyName = 'A' | 'B' | 'C';
/** Names of the parameters and body fields that take an id. */
const ID_NAMES = ['petId', 'categoryId', 'orderId', 'keyId', 'messageId'] as const;
type IdName = (typeof ID_NAMES)[number];

interface Party {
  name: PartyName;
  tenant: Tenant;
  /** In every name this account gives its things. */
  tag: string;
  /** Strings no answer to anyone else may contain. */
  secrets: string[];
  ids: Record<IdName, Array<number | string>>;
  /** Cursors of this account's list pages. */
  cursors: string[];
  /** A key of this account that was revoked. */
  revokedKey: string;
  canaries: number;
}

const t = await startApp();
after(() => t.close());
const openapi = (await t.app.inject({ method: 'GET', url: '/v1/openapi.json' })).json();
const operations = operationsOf(openapi as OpenApiDocument);

const parties = {} as Record<PartyName, Party>;
/** The fuzzed tenants; C, the bystander, never sends a fuzzed request. */
const CALLERS = ['A', 'B'] as const;

async function expectStatus(
  res: Promise<LightMyRequestResponse>,
  status: number,
): Promise<Record<string, unknown>> {
  const answer = await res;
  assert.equal(answer.statusCode, status, answer.body);
  return answer.body === '' ? {} : answer.json();
}

/** A category, a pet in it, and an ordered pet, named with the account's tag. */
async function addCanaries(party: Party): Promise<void> {
  const n = ++party.canaries;
  const category = await createCategory(t.app, party.tenant, `${party.tag}-category-${n}`);
  const [pet, ordered] = await Promise.all(
    ['pet', 'ordered'].map((what) =>
      createPet(t.app, party.tenant, {
        name: `${party.tag}-${what}-${n}`,
        categoryId: category.id,
      }),
    ),
  );
  const order = await expectStatus(
    as(t.app, party.tenant, {
      method: 'POST',
      url: '/v1/store/orders',
      payload: { petId: ordered.id },
    }),
    201,
  );
  party.ids.categoryId.push(category.id);
  party.ids.petId.push(pet.id, ordered.id);
  party.ids.orderId.push(order.id as number);
}

async function newParty(name: PartyName): Promise<Party> {
  const tenant = await newTenant(t.app);
  const tag = `secret-${name}-${randomUUID()}`;
  const party: Party = {
    name,
    tenant,
    tag,
    secrets: [tag, tenant.email, tenant.key, tenant.keyId],
    ids: { petId: [], categoryId: [], orderId: [], keyId: [], messageId: [] },
    cursors: [],
    revokedKey: '',
    canaries: 0,
  };
  await addCanaries(party);
  await addCanaries(party);
  const message = await expectStatus(
    as(t.app, tenant, { method: 'POST', url: '/messages', payload: { message: `${tag}-message` } }),
    202,
  );
  party.ids.messageId.push(message.id as string);
  // Spare keys (the fuzzed revocations aim at them, never at the tenant's own key) and a revoked
  // one, written to the store: through the API each would cost a password hash.
  const { database, clock, config, keysChanged } = t.app.ctx;
  for (let i = 0; i < 3; i++) {
    const { key, secret } = await database.write((tx) =>
      createApiKey(tx, clock, config.env, tenant.accountId, secretKey(`${tag}-key`)),
    );
    party.secrets.push(key.id, secret);
    if (i < 2) party.ids.keyId.push(key.id);
    else {
      const revoked = await revokeKey(database, clock, tenant.accountId, key.id, keysChanged);
      assert.ok(revoked.ok);
      party.revokedKey = secret;
    }
  }
  for (const list of ['/v1/pets', '/v1/categories', '/v1/store/orders']) {
    const page = await as(t.app, tenant, { method: 'GET', url: `${list}?limit=1` });
    const cursor = nextLinkUrl(page)?.searchParams.get('cursor');
    assert.ok(cursor, `${list}: no next page`);
    party.cursors.push(cursor);
  }
  return party;
}

/** What the bystander owns, as it reads it (without what reading it changes). */
async function bystanderState(): Promise<unknown> {
  const { tenant, ids } = parties.C;
  const read = async (url: string, headers?: Record<string, string>) => {
    const res = await (headers
      ? t.app.inject({ method: 'GET', url, headers })
      : as(t.app, tenant, { method: 'GET', url }));
    assert.equal(res.statusCode, 200, `${url}: ${res.body}`);
    return res.json();
  };
  const keys = (await read('/v1/keys', {
    authorization: basic(tenant.email, tenant.password),
  })) as Array<{ id: string; name: string | null }>;
  const messages = [];
  for (const id of ids.messageId) {
    const { message } = (await read(`/messages/${id}`)) as { message: string };
    messages.push(message);
  }
  const { id, email, plan, limits } = (await read('/v1/account')) as Record<string, unknown>;
  return {
    account: { id, email, plan, limits },
    pets: await read('/v1/pets?limit=100'),
    categories: await read('/v1/categories?limit=100'),
    orders: await read('/v1/store/orders?limit=100'),
    inventory: await read('/v1/store/inventory'),
    keys: keys.map(({ id, name }) => ({ id, name })),
    messages,
  };
}

let bystanderBefore: unknown;
before(async () => {
  // At once: each sign-up costs a password hash, and they run on separate threads.
  const [A, B, C] = await Promise.all((['A', 'B', 'C'] as const).map(newParty));
  Object.assign(parties, { A, B, C });
  bystanderBefore = await bystanderState();
});

// ---------------------------------------------------------------------------------------------
// Requests

interface Credentials {
  authorization?: string;
  /** Whose valid credentials these are, for the operation's scheme. */
  caller: PartyName | null;
}

function credentials(auth: Auth): fc.Arbitrary<Credentials> {
  const { A, B } = parties;
  const anonymous = (authorization?: string): Credentials => ({ authorization, caller: null });
  // `email:password` pairs near the tenants' own, and far from them.
  const emails = fc.oneof(
    fc.constantFrom(A.tenant.email, B.tenant.email, A.tenant.email.toUpperCase()),
    fc.emailAddress(),
    UNICODE,
    fc.tuple(fc.constantFrom(A.tenant.email, B.tenant.email), UNICODE).map(([e, u]) => e + u),
  );
  // Never the right password: these are not the tenants' credentials.
  const passwords = fc.oneof(UNICODE, PRINTABLE);
  const junk = fc.oneof(
    PRINTABLE,
    PRINTABLE.map((s) => `Bearer ${s}`),
    PRINTABLE.map((s) => `Basic ${Buffer.from(s).toString('base64')}`),
    fc.tuple(emails, passwords).map(([email, password]) => basic(email, password)),
    fc
      .tuple(fc.constantFrom('as_test_', 'as_live_'), fc.stringMatching(/^[0-9A-Za-z]{40}$/))
      .map(([prefix, rest]) => `Bearer ${prefix}${rest}`),
  );
  const both = (make: (party: Party) => string[]) => [...make(A), ...make(B)];
  const spellings: Record<Exclude<Auth, 'none'>, (p: Party) => string[]> = {
    bearer: (p) => [`Bearer ${p.tenant.key}`, `bearer ${p.tenant.key}`, `BEARER  ${p.tenant.key} `],
    basic: (p) => [basic(p.tenant.email, p.tenant.password)],
  };
  const valid = (scheme: Exclude<Auth, 'none'>) =>
    fc.constantFrom(
      ...CALLERS.flatMap((name) =>
        spellings[scheme](parties[name]).map((authorization) => ({ authorization, caller: name })),
      ),
    );
  const invalid = fc.constantFrom<Credentials>(
    anonymous(),
    anonymous(''),
    anonymous('Bearer'),
    anonymous('Bearer '),
    anonymous('Basic'),
    anonymous('Basic !!'),
    anonymous(`Basic ${Buffer.from('no colon').toString('base64')}`),
    anonymous(`Basic ${Buffer.from(':').toString('base64')}`),
    anonymous(basic(`nobody-${randomUUID()}@example.com`, 'correct horse battery staple')),
    ...both((p) => [
      `Bearer ${p.tenant.key}x`,
      `Bearer ${p.tenant.key.slice(0, -1)}`,
      `Bearer ${p.revokedKey}`,
      `Token ${p.tenant.key}`,
      p.tenant.key,
      basic(p.tenant.email, 'wrong password, long enough'),
      basic(p.tenant.email.toUpperCase(), `${p.tenant.password} `),
      ...(auth === 'basic'
        ? [`Bearer ${p.tenant.key}`]
        : [basic(p.tenant.email, p.tenant.password)]),
    ]).map((authorization) => anonymous(authorization)),
    anonymous(`Bearer ${A.tenant.key} ${B.tenant.key}`),
    anonymous(`Bearer ${A.tenant.key}, Bearer ${B.tenant.key}`),
  );
  return fc.oneof(
    ...(auth === 'none' ? [] : [{ weight: 6, arbitrary: valid(auth) }]),
    { weight: 3, arbitrary: invalid },
    { weight: auth === 'basic' ? 2 : 1, arbitrary: junk.map((value) => anonymous(value)) },
  );
}

/** Ids that exist, of both tenants and the bystander, for a parameter or field `name`. */
function existingIds(name: string): Array<number | string> {
  if (!(ID_NAMES as readonly string[]).includes(name)) return [];
  const pool = Object.values(parties).flatMap((p) => p.ids[name as IdName]);
  // The bystander's own key too: revoking it as anyone else must fail.
  return name === 'keyId' ? [...pool, parties.C.tenant.keyId] : pool;
}

/** Marks the emails this run signs up with: a run on a store an earlier one used (PostgreSQL)
 * would otherwise only ever meet `email_taken`. */
const RUN = randomUUID().slice(0, 8);

/** Values that reach past validation: ids that exist, emails not taken yet. */
function likelyValues(name: string): fc.Arbitrary<unknown> | undefined {
  if (name === 'email') return fc.emailAddress().map((email) => `fuzz-${RUN}-${email}`);
  const ids = existingIds(name);
  return ids.length > 0 ? fc.constantFrom(...ids) : undefined;
}

/** A value of a path or query parameter, as text, before it goes into the URL. */
function parameterValue(param: Parameter): fc.Arbitrary<string> {
  const options: Array<fc.WeightedArbitrary<string>> = [
    {
      weight: 3,
      arbitrary: arbitraryOf(openapi, param.schema ?? {}, likelyValues).map((v) =>
        typeof v === 'string' ? v : JSON.stringify(v),
      ),
    },
    { weight: 3, arbitrary: JUNK_VALUE },
  ];
  const ids = existingIds(param.name).map(String);
  if (ids.length > 0) options.push({ weight: 6, arbitrary: fc.constantFrom(...ids) });
  if (param.name === 'cursor') {
    // Cursors of every account's pages, and cursors made up in the shape ours have (opaque to
    // clients, but base64url of `k1.<last id>`: a client can forge one).
    const cursors = Object.values(parties).flatMap((p) => p.cursors);
    const base64url = (text: string) => Buffer.from(text).toString('base64url');
    const forged = fc
      .tuple(
        fc.constantFrom('k1.', 'k2.', 'k1.-', 'k1.0', 'k1. ', ''),
        fc.oneof(fc.bigInt({ min: 0n, max: 10n ** 17n }).map(String), JUNK_VALUE),
      )
      .map(([prefix, id]) => base64url(prefix + id));
    options.push(
      { weight: 3, arbitrary: fc.constantFrom(...cursors) },
      { weight: 2, arbitrary: forged },
    );
  }
  return fc.oneof(...options);
}

function queryString(op: Operation): fc.Arbitrary<string> {
  const known = op.queryParams.map((p) => fc.tuple(fc.constant(p.name), parameterValue(p)));
  const unknown = fc.tuple(
    fc.oneof(
      PRINTABLE,
      fc.constantFrom('__proto__', 'constructor', 'toString', 'limit[]', 'limit[0]', 'a.b', ''),
    ),
    JUNK_VALUE,
  );
  const pair = fc.oneof(...known.map((arbitrary) => ({ weight: 4, arbitrary })), {
    weight: 1,
    arbitrary: unknown,
  });
  const encoded = pair.chain(([name, value]) =>
    fc.tuple(inUrl(fc.constant(name)), inUrl(fc.constant(value))).map(([n, v]) => `${n}=${v}`),
  );
  return fc
    .tuple(
      fc.array(encoded, { maxLength: op.queryParams.length > 0 ? 5 : 2 }),
      fc.oneof(
        { weight: 8, arbitrary: fc.constant('') },
        {
          weight: 1,
          arbitrary: fc.constantFrom('&', '&&', '=', '&=', '#fragment', '?', '%', '&a'),
        },
      ),
    )
    .map(([pairs, tail]) => (pairs.length > 0 || tail ? `?${pairs.join('&')}${tail}` : ''));
}

function url(op: Operation): fc.Arbitrary<string> {
  const segments = op.pathParams.map((p) => inUrl(parameterValue(p)));
  return fc.tuple(fc.tuple(...segments), queryString(op)).map(([values, query]) => {
    let i = 0;
    return op.path.replace(/\{[^}]+\}/g, () => values[i++] ?? '') + query;
  });
}

interface Body {
  payload?: string | Buffer;
  contentType?: string;
}

const CONTENT_TYPE = fc.oneof(
  { weight: 12, arbitrary: fc.constant('application/json') },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      'application/json; charset=utf-8',
      'APPLICATION/JSON',
      'application/json; charset=latin1',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/vnd.api+json',
      'application/json, text/plain',
      '',
      undefined,
    ),
  },
  { weight: 1, arbitrary: PRINTABLE },
);

function bodies(op: Operation): fc.Arbitrary<Body> {
  const schema = op.body;
  const firstField = Object.keys(schema?.properties ?? {})[0] ?? 'name';
  const garbage = fc.oneof(
    fc.json(),
    fc.anything().map((v) => JSON.stringify(v)),
    fc.constantFrom(...BROKEN_JSON),
    deep(firstField),
    fc
      .uint8Array({ min: 0x80, max: 0xff, minLength: 1, maxLength: 8 })
      .map((bytes) =>
        Buffer.concat([Buffer.from(`{"${firstField}":"`), Buffer.from(bytes), Buffer.from('"}')]),
      ),
  );
  const text: Array<fc.WeightedArbitrary<string | Buffer | undefined>> = [
    { weight: schema ? 1 : 12, arbitrary: fc.constant(undefined) },
    { weight: schema ? 3 : 2, arbitrary: garbage },
  ];
  if (schema) {
    const valid = arbitraryOf(openapi, schema, likelyValues);
    const fields = Object.keys(deref(openapi, schema).properties ?? {});
    const required = deref(openapi, schema).required ?? [];
    const asObject = (v: unknown) =>
      typeof v === 'object' && v !== null && !Array.isArray(v)
        ? (v as Record<string, unknown>)
        : {};
    const broken: Array<fc.Arbitrary<string | undefined>> = [
      fc
        .tuple(
          valid,
          fc.oneof(PRINTABLE, fc.constantFrom('__proto__', 'id', 'accountId')),
          WRONG_VALUE,
        )
        .map(([v, k, w]) => JSON.stringify({ ...asObject(v), [k]: w })),
      valid.map((v) => JSON.stringify([v])),
      valid.map((v) => JSON.stringify(JSON.stringify(v))),
      valid
        .map((v) => JSON.stringify(v))
        .chain((s) => fc.nat({ max: Math.max(0, s.length - 1) }).map((n) => s.slice(0, n))),
    ];
    if (fields.length > 0) {
      broken.push(
        fc
          .tuple(valid, fc.constantFrom(...fields), WRONG_VALUE)
          .map(([v, k, w]) => JSON.stringify({ ...asObject(v), [k]: w })),
        fc
          .tuple(valid, fc.constantFrom(...fields))
          .map(([v, k]) => JSON.stringify({ ...asObject(v), [k.toUpperCase()]: asObject(v)[k] })),
      );
    }
    if (required.length > 0) {
      broken.push(
        fc.tuple(valid, fc.constantFrom(...required)).map(([v, k]) => {
          const { [k]: _, ...rest } = asObject(v);
          return JSON.stringify(rest);
        }),
      );
    }
    text.push(
      { weight: 6, arbitrary: valid.map((v) => JSON.stringify(v)) },
      { weight: 4, arbitrary: fc.oneof(...broken) },
    );
  }
  return fc
    .tuple(fc.oneof(...text), CONTENT_TYPE)
    .map(([payload, contentType]) => ({ payload, contentType }));
}

/** Headers besides the credentials, the content type and the operation's own. */
const OTHER_HEADERS = fc.record(
  {
    'x-request-id': fc.oneof(PRINTABLE, fc.constantFrom('a'.repeat(129), 'req-1', '')),
    accept: fc.oneof(PRINTABLE, fc.constantFrom('application/json', 'text/html', '*/*', '')),
    'if-none-match': fc.oneof(PRINTABLE, fc.constantFrom('*', 'W/"1"', '"x"')),
    'x-forwarded-for': fc.oneof(PRINTABLE, fc.ipV4(), fc.ipV6()),
  },
  { requiredKeys: [] },
);

interface FuzzRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string | Buffer;
  caller: PartyName | null;
}

function requests(op: Operation): fc.Arbitrary<FuzzRequest> {
  const headerParams = op.headerParams.map((p) =>
    fc
      .option(
        parameterValue(p).filter((v) => /^[\t\x20-\x7e\x80-\xff]*$/.test(v)),
        { nil: undefined },
      )
      .map((value) => [p.name, value] as const),
  );
  return fc
    .record({
      credentials: credentials(op.auth),
      url: url(op),
      body: bodies(op),
      other: OTHER_HEADERS,
      params: fc.tuple(...headerParams),
    })
    .map(({ credentials, url, body, other, params }) => {
      const headers: Record<string, string> = { ...other };
      for (const [name, value] of params) if (value !== undefined) headers[name] = value;
      if (credentials.authorization !== undefined) {
        headers.authorization = credentials.authorization;
      }
      if (body.contentType !== undefined) headers['content-type'] = body.contentType;
      return printable({
        method: op.method,
        url,
        headers,
        ...(body.payload !== undefined && { payload: body.payload }),
        caller: credentials.caller,
      });
    });
}

/** How fast-check prints a request in a counterexample: a 60 KB body cut short. */
function printable(req: FuzzRequest): FuzzRequest {
  const payload = req.payload === undefined ? undefined : shortText(req.payload);
  // Not enumerable: the spread that makes the inject options leaves it out.
  Object.defineProperty(req, fc.toStringMethod, {
    value: () => JSON.stringify({ ...req, ...(payload !== undefined && { payload }) }),
  });
  return req;
}

function shortText(payload: string | Buffer, max = 300): string {
  const text = Buffer.isBuffer(payload) ? `<bytes ${payload.toString('hex')}>` : payload;
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length} characters)`;
}

// ---------------------------------------------------------------------------------------------
// Properties

const ERROR_FIELDS = new Set(['code', 'message', 'status', 'details']);
const API_PATH = /^\/(?:v1|messages)(?:[/?#]|$)/;

function describeRequest(req: FuzzRequest, res: LightMyRequestResponse): string {
  const payload = req.payload === undefined ? '' : ` ${shortText(req.payload)}`;
  return `${req.method} ${req.url} ${JSON.stringify(req.headers)}${payload}\n→ ${res.statusCode} ${res.body.slice(0, 500)}`;
}

function checkResponse(req: FuzzRequest, res: LightMyRequestResponse, op: Operation): void {
  const what = describeRequest(req, res);
  assert.ok(res.statusCode < 500, `5xx: ${what}`);
  const contentType = String(res.headers['content-type'] ?? '');
  if (res.statusCode >= 400) {
    assert.match(contentType, /^application\/json/, `4xx without a JSON body: ${what}`);
    let body: unknown;
    try {
      body = JSON.parse(res.body);
    } catch {
      assert.fail(`4xx body is not JSON: ${what}`);
    }
    assert.ok(typeof body === 'object' && body !== null && !Array.isArray(body), what);
    const error = body as Record<string, unknown>;
    const extra = Object.keys(error).filter((k) => !ERROR_FIELDS.has(k));
    assert.deepEqual(extra, [], `extra fields in an Error body: ${what}`);
    assert.equal(typeof error.code, 'string', `no code: ${what}`);
    const code = error.code as string;
    assert.match(code, /^[a-z]+(?:_[a-z]+)*$/, `code not snake_case: ${what}`);
    assert.ok(Object.hasOwn(ERRORS, code), `code ${code} is not in the error table: ${what}`);
    assert.equal(error.status, res.statusCode, `status field differs from HTTP: ${what}`);
    assert.equal(
      ERRORS[code as keyof typeof ERRORS].status,
      res.statusCode,
      `the error table gives ${code} another status: ${what}`,
    );
    assert.ok(typeof error.message === 'string' && error.message !== '', `no message: ${what}`);
    assert.ok(saysNextStep(error.message), `a message without a next step: ${what}`);
    if (error.details !== undefined) {
      assert.ok(Array.isArray(error.details), `details not a list: ${what}`);
      for (const detail of error.details as unknown[]) {
        const { location, message } = (detail ?? {}) as Record<string, unknown>;
        assert.ok(typeof location === 'string' && typeof message === 'string', what);
      }
    }
  } else if (res.statusCode >= 200 && res.statusCode < 300 && res.body !== '') {
    assert.match(contentType, /^application\/json/, `2xx body that is not JSON: ${what}`);
    assert.doesNotThrow(() => JSON.parse(res.body), `2xx body that does not parse: ${what}`);
  }
  // Every answer under the API to valid credentials (or to anyone, on an open operation) is
  // counted, and says so.
  const path = res.raw.req.url ?? req.url;
  if (
    API_PATH.test(path) &&
    (req.caller !== null || op.auth === 'none') &&
    res.statusCode !== 503
  ) {
    assert.ok(res.headers['x-ratelimit-limit'], `no X-RateLimit-Limit: ${what}`);
  }
  // Nothing of an account reaches anyone else, unless the request itself carried it (or, in
  // the caller's request log, one of its requests before: the log shows what each was sent
  // with, another account's ids in its path included).
  const seen = res.body + JSON.stringify(res.headers);
  const sent = `${req.url} ${JSON.stringify(req.headers)} ${
    Buffer.isBuffer(req.payload) ? req.payload.toString('latin1') : (req.payload ?? '')
  }`;
  const earlier =
    req.caller !== null && /^\/v1\/requests/.test(req.url) ? sentBefore[req.caller] : [];
  for (const party of Object.values(parties)) {
    if (party.name === req.caller) continue;
    for (const secret of party.secrets) {
      assert.ok(
        !seen.includes(secret) ||
          sent.includes(secret) ||
          earlier.some((before) => before.includes(secret)),
        `${party.name}'s ${secret} in an answer to ${req.caller ?? 'nobody'}: ${what}`,
      );
    }
  }
  // What the log keeps of a request: its path (its body only on an error, redacted, 4 KB).
  if (req.caller !== null) sentBefore[req.caller].push(sent.slice(0, 8192));
}

/** What each party's requests were sent with, in the order sent (see above). */
const sentBefore: Record<PartyName, string[]> = { A: [], B: [], C: [] };

const sentTo = new Map<string, number>();
let sentInAll = 0;

/** Fuzzes one operation; resolves to a line about what was sent and answered. */
async function fuzz(op: Operation): Promise<string> {
  // Things of both tenants that this operation's runs have not touched yet.
  await Promise.all(CALLERS.map((name) => addCanaries(parties[name])));
  const statuses = new Map<string, number>();
  const batch = fc.oneof(
    { weight: 4, arbitrary: fc.array(requests(op), { minLength: 1, maxLength: 4 }) },
    // The same request twice at once: a race for the same row.
    { weight: 1, arbitrary: requests(op).map((req) => [req, req]) },
  );
  // Shrinking sends requests too, each costly where it hashes a password: after the first
  // failure, at most this many more batches are sent, then fast-check reports the smallest
  // failing one found by then.
  let shrinks = op.auth === 'bearer' ? 60 : 15;
  let failed = false;
  await fc.assert(
    fc.asyncProperty(batch, async (batch) => {
      if (failed && shrinks-- <= 0) return;
      // At once, in the same turn: races between them are part of the fuzz.
      const answers = await Promise.all(
        batch.map(({ caller: _, ...options }) =>
          t.app.inject({ ...(options as InjectOptions), remoteAddress: freshIp() }),
        ),
      );
      sentTo.set(op.key, (sentTo.get(op.key) ?? 0) + batch.length);
      sentInAll += batch.length;
      for (const [i, req] of batch.entries()) {
        const res = answers[i] as LightMyRequestResponse;
        try {
          checkResponse(req, res, op);
        } catch (err) {
          failed = true;
          throw err;
        }
        const code = res.statusCode < 400 ? String(res.statusCode) : res.json().code;
        statuses.set(code, (statuses.get(code) ?? 0) + 1);
      }
    }),
    { numRuns: runs[op.auth], seed: SEED, includeErrorInReport: true },
  );
  const tally = [...statuses].sort(([a], [b]) => a.localeCompare(b)).map(([k, n]) => `${k} ${n}`);
  return `${sentTo.get(op.key)} requests, seed ${SEED}: ${tally.join(', ')}`;
}

describe('fuzzing every operation of the OpenAPI document', () => {
  // The operations that hash a password on each request run in the background from the start,
  // their hashes on the thread pool while the others' requests keep the main thread busy; they
  // are reported last.
  const hashing = operations.filter((op) => op.auth !== 'bearer');
  const inBackground = new Map<string, Promise<string>>();
  before(() => {
    for (const op of hashing) {
      const fuzzed = fuzz(op);
      fuzzed.catch(() => {}); // awaited, and reported, by the operation's test
      inBackground.set(op.key, fuzzed);
    }
  });

  for (const op of [...operations.filter((op) => op.auth === 'bearer'), ...hashing]) {
    it(`${op.key}: ${op.method} ${op.path}`, async (context) => {
      context.diagnostic(await (inBackground.get(op.key) ?? fuzz(op)));
    });
  }

  it('fuzzed every operation of the document', (context) => {
    assert.ok(operations.length > 0, 'no operation in the document');
    const missing = operations.filter((op) => !sentTo.get(op.key)).map((op) => op.key);
    assert.deepEqual(missing, []);
    context.diagnostic(`${sentInAll} requests to ${operations.length} operations`);
  });

  it("left the bystander's data as it was", async () => {
    assert.deepEqual(await bystanderState(), bystanderBefore);
  });
});
