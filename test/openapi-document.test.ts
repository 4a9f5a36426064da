/**
 * The OpenAPI document as a client generator and a contract tester read it: named components,
 * examples that match their schemas, rate-limit headers required where they are always sent
 * (checked against live answers), Idempotency-Key on every POST, named TypeScript types from
 * openapi-typescript, and the Postman collection made from it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Ajv2020Module from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { LightMyRequestResponse } from 'fastify';
import openapiTS, { astToString } from 'openapi-typescript';
import { ERRORS } from '../src/errors.js';
import {
  as,
  createCategory,
  createPet,
  errorCode,
  newTenant,
  startApp,
  type TestApp,
  until,
} from './helpers.js';

const Ajv2020 = Ajv2020Module.default;
const addFormats = addFormatsModule.default;

type Json = Record<string, unknown>;
interface Doc extends Json {
  info: { description: string };
  paths: Record<string, Record<string, Json>>;
  components: {
    schemas: Record<string, Json>;
    responses: Record<string, Json>;
    headers: Record<string, Json>;
    parameters: Record<string, Json>;
  };
  webhooks?: Record<string, Json>;
}

const METHODS = ['get', 'put', 'post', 'patch', 'delete'];

/** Names a client generator must find (issue 20). */
const NAMED = [
  'Pet',
  'NewPet',
  'PetUpdate',
  'PetStatus',
  'PetPage',
  'Category',
  'NewCategory',
  'CategoryUpdate',
  'CategoryPage',
  'Order',
  'NewOrder',
  'OrderUpdate',
  'OrderStatus',
  'OrderPage',
  'Inventory',
  'Message',
  'MessageRecord',
  'NewMessage',
  'Account',
  'NewAccount',
  'ApiKey',
  'ApiKeyList',
  'ApiKeyRequest',
  'NewApiKey',
  'Error',
];

const RATE_LIMIT = [
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'RateLimit-Policy',
  'RateLimit',
];

function deref<T>(doc: Doc, value: T): T {
  let current = value as Json;
  while (typeof current?.$ref === 'string') {
    let target: unknown = doc;
    for (const part of (current.$ref as string).slice(2).split('/')) {
      target = (target as Json)[part.replaceAll('~1', '/').replaceAll('~0', '~')];
    }
    assert.ok(target, `dangling ${current.$ref}`);
    current = target as Json;
  }
  return current as T;
}

interface Op {
  label: string;
  method: string;
  path: string;
  operation: Json & { operationId: string; responses: Record<string, Json>; parameters?: Json[] };
}

function operations(doc: Doc): Op[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    METHODS.filter((m) => item[m]).map((method) => {
      const operation = item[method] as Op['operation'];
      return { label: `${method.toUpperCase()} ${path}`, method, path, operation };
    }),
  );
}

/** Every object of `value`, with its JSON path. */
function* walk(value: unknown, path = '#'): Generator<[string, Json]> {
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) yield* walk(item, `${path}/${i}`);
  } else if (value && typeof value === 'object') {
    yield [path, value as Json];
    for (const [key, item] of Object.entries(value)) yield* walk(item, `${path}/${key}`);
  }
}

/** A schema of the document with its `$ref`s pointed into the schema `doc` added to Ajv. */
function pointedIntoDoc(schema: unknown): Json {
  return JSON.parse(
    JSON.stringify(schema).replaceAll('"#/components/schemas/', '"doc#/$defs/'),
  ) as Json;
}

describe('OpenAPI document for clients', () => {
  let t: TestApp;
  let doc: Doc;
  let ops: Op[];
  let ajv: InstanceType<typeof Ajv2020>;

  before(async () => {
    t = await startApp();
    const res = await t.app.inject({ method: 'GET', url: '/v1/openapi.json' });
    assert.equal(res.statusCode, 200);
    doc = res.json();
    ops = operations(doc);
    ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    ajv.addFormat('int32', {
      type: 'number',
      validate: (n: number) => Number.isInteger(n) && Math.abs(n) < 2 ** 31,
    });
    ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isInteger(n) });
    // The document's schemas, so that `$ref: #/components/schemas/…` resolves.
    ajv.addSchema(pointedIntoDoc({ $id: 'doc', $defs: doc.components.schemas }));
  });
  after(() => t.close());

  const validatorOf = (schema: unknown) => ajv.compile(pointedIntoDoc(schema));

  it('names every schema a client needs, and defines each once', () => {
    for (const name of NAMED) assert.ok(doc.components.schemas[name], `no component ${name}`);
    // Nothing titled is left inline: every use of a named schema is a $ref.
    for (const [path, object] of walk(doc.paths)) {
      assert.equal(typeof object.title, 'undefined', `${path}: an inline titled schema`);
    }
    // The Error object, {code, message, status}, is written out once in the whole document.
    const errors = [...walk(doc)].filter(
      ([, o]) =>
        o.type === 'object' &&
        (o.properties as Json | undefined)?.code &&
        (o.properties as Json).status,
    );
    assert.deepEqual(
      errors.map(([path]) => path),
      ['#/components/schemas/Error'],
    );
    // And every body, sent or answered, is a named schema.
    for (const { label, operation } of ops) {
      const bodies = [
        ['request', (operation.requestBody as Json | undefined)?.content],
        ...Object.entries(operation.responses).map(([status, r]) => [
          status,
          deref(doc, r).content,
        ]),
      ] as Array<[string, Record<string, Json> | undefined]>;
      for (const [where, content] of bodies) {
        const schema = content?.['application/json']?.schema as Json | undefined;
        if (schema)
          assert.match(String(schema.$ref), /^#\/components\/schemas\//, `${label} ${where}`);
      }
    }
    // 114 KB for the catalogue's 24 operations; the 10 of events and webhooks brought it to ~150.
    // The request log's three operations and each operation's scope took it past 180 KB; each
    // event type's schema and delivery (the webhooks section) to ~210 KB; removing orders and
    // messages (two operations, two event types) to ~224 KB; the sandbox's reset and
    // webhook_endpoint.disabled to ~241 KB; an endpoint's recovery to ~250 KB; publishable keys
    // (their fields, and the catalogue reads' 403 for a page of another origin) to ~253 KB.
    assert.ok(JSON.stringify(doc).length < 260_000, 'the document grew past 260 KB');
  });

  it('has an example on every request body and every response with a body, valid for its schema', () => {
    let checked = 0;
    const check = (where: string, schema: unknown, value: unknown) => {
      const validate = validatorOf(schema);
      assert.ok(
        validate(value),
        `${where}: ${JSON.stringify(value)}: ${ajv.errorsText(validate.errors)}`,
      );
      checked++;
    };
    const media = (where: string, json: Json | undefined) => {
      assert.ok(json, `${where}: no application/json content`);
      const examples = json.examples
        ? Object.entries(json.examples as Record<string, { value: unknown }>).map(([name, e]) => [
            name,
            e.value,
          ])
        : [['example', json.example]];
      assert.ok(
        examples.length > 0 && examples.every(([, v]) => v !== undefined),
        `${where}: no example`,
      );
      for (const [name, value] of examples) check(`${where} (${name})`, json.schema, value);
    };
    for (const { label, operation } of ops) {
      const body = operation.requestBody as { content: Record<string, Json> } | undefined;
      if (body) media(`${label} request`, body.content['application/json']);
      for (const [status, ref] of Object.entries(operation.responses)) {
        const response = deref(doc, ref) as {
          content?: Record<string, Json>;
          headers?: Record<string, Json>;
        };
        if (status === '204') assert.equal(response.content, undefined, `${label} 204 has a body`);
        else media(`${label} ${status}`, response.content?.['application/json']);
        for (const [name, header] of Object.entries(response.headers ?? {})) {
          const h = deref(doc, header) as { schema: Json; example?: unknown };
          assert.notEqual(h.example, undefined, `${label} ${status} header ${name}: no example`);
          check(`${label} ${status} header ${name}`, h.schema, h.example);
        }
      }
      for (const p of operation.parameters ?? []) {
        const parameter = deref(doc, p) as { name: string; schema: Json; example?: unknown };
        if (parameter.example !== undefined)
          check(`${label} ${parameter.name}`, parameter.schema, parameter.example);
      }
    }
    // Every named schema's own examples too.
    for (const [name, schema] of Object.entries(doc.components.schemas)) {
      assert.ok(
        Array.isArray(schema.examples) && schema.examples.length > 0,
        `${name}: no examples`,
      );
      for (const value of schema.examples as unknown[])
        check(`schema ${name}`, { $ref: `#/components/schemas/${name}` }, value);
    }
    assert.ok(checked > 200, `only ${checked} examples checked`);
  });

  it('types each event by `type`, as served, and lists each in the webhooks section', async () => {
    const tenant = await newTenant(t.app);
    const call = (method: string, url: string, payload?: object) =>
      as(t.app, tenant, { method: method as 'GET', url, ...(payload && { payload }) });
    const { id: categoryId } = await createCategory(t.app, tenant);
    const pets = await Promise.all([1, 2, 3].map(() => createPet(t.app, tenant, { categoryId })));
    await call('PATCH', `/v1/pets/${pets[0]?.id}`, { name: 'Renamed' });
    await call('DELETE', `/v1/pets/${pets[0]?.id}`);
    const delivered = (await call('POST', '/v1/store/orders', { petId: pets[1]?.id })).json();
    await call('PATCH', `/v1/store/orders/${delivered.id}`, { status: 'approved' });
    await call('PATCH', `/v1/store/orders/${delivered.id}`, { status: 'delivered' });
    const cancelled = (await call('POST', '/v1/store/orders', { petId: pets[2]?.id })).json();
    await call('PATCH', `/v1/store/orders/${cancelled.id}`, { status: 'cancelled' });
    const message = (await call('POST', '/messages', { message: 'Typed' })).json();
    await until(
      async () => (await call('GET', `/messages/${message.id}`)).json().status === 'sent',
      'the message sent',
    );
    const events = (await call('GET', '/v1/events?limit=100')).json() as Array<{ type: string }>;
    const validate = validatorOf({ $ref: '#/components/schemas/Event' });
    for (const event of events) {
      assert.ok(validate(event), `${JSON.stringify(event)}: ${ajv.errorsText(validate.errors)}`);
    }
    const seen = new Set(events.map((event) => event.type));
    for (const type of ['pet.created', 'pet.updated', 'pet.deleted', 'order.placed']) {
      assert.ok(seen.has(type), type);
    }
    for (const type of ['order.approved', 'order.delivered', 'order.cancelled', 'message.sent']) {
      assert.ok(seen.has(type), type);
    }
    // A pet's event is not an order's: `type` tells which schema its `data` has.
    const asOrder = {
      ...events.find((event) => event.type === 'pet.created'),
      type: 'order.placed',
    };
    assert.equal(validate(asOrder), false);
    // Every type, the test event's too, is a delivery of the webhooks section.
    const types = (doc.components.schemas.EventType as { enum: string[] }).enum;
    assert.deepEqual(Object.keys(doc.webhooks ?? {}).sort(), [...types].sort());
  });

  it('limits every string and array a client sends, and every list', () => {
    for (const [path, object] of walk(doc)) {
      if (object.type === 'string' && object.enum === undefined && object.const === undefined) {
        assert.equal(typeof object.maxLength, 'number', `${path}: a string without maxLength`);
      }
      if (object.type === 'array') {
        assert.equal(typeof object.maxItems, 'number', `${path}: an array without maxItems`);
      }
    }
  });

  it('types every enum, so that generators type its values (not `unknown`)', () => {
    const enums = [...walk(doc)].filter(([, o]) => Array.isArray(o.enum));
    assert.ok(enums.length >= 10, `${enums.length} enums`);
    for (const [path, object] of enums) assert.equal(object.type, 'string', path);
  });

  it('types every union, and writes a value-or-null as `type: [T, "null"]` (Scalar checks it)', () => {
    const unions = [...walk(doc)].filter(([, o]) => Array.isArray(o.anyOf ?? o.oneOf));
    for (const [path, object] of unions) assert.ok(object.type !== undefined, path);
    const nullable = [...walk(doc)].filter(
      ([, o]) => Array.isArray(o.type) && (o.type as unknown[]).includes('null'),
    );
    assert.ok(nullable.length >= 15, `${nullable.length} nullable values`);
    // Only a `$ref` or null stays a union: a $ref takes no sibling type of its own.
    for (const [path, object] of unions) {
      if ((object.type as unknown[]).includes?.('null')) {
        assert.ok(JSON.stringify(object.anyOf).includes('$ref'), path);
      }
    }
  });

  it('uses no \\p{…} or lookahead in patterns, so that any validator reads them alike', () => {
    const patterns = [...walk(doc)].filter(([, o]) => typeof o.pattern === 'string');
    assert.ok(patterns.length > 10);
    for (const [path, { pattern }] of patterns) {
      assert.doesNotMatch(String(pattern), /\\[pP]\{|\(\?[=!<]/, `${path}: ${pattern}`);
      // Compiles without the `u` flag, as validators without it read it.
      new RegExp(String(pattern));
    }
  });

  it('marks the rate-limit headers required exactly where every answer carries them', () => {
    // Not 400: a malformed Host header is refused before the request is counted (below).
    const counted = /^(2\d\d|401|404|409|410|413|422|429)$/;
    for (const { label, operation } of ops) {
      for (const [status, ref] of Object.entries(operation.responses)) {
        const response = deref(doc, ref) as { headers: Record<string, Json> };
        for (const name of RATE_LIMIT) {
          const header = response.headers[name];
          assert.ok(header, `${label} ${status}: no ${name}`);
          assert.equal(
            deref(doc, header).required === true,
            counted.test(status),
            `${label} ${status} ${name}`,
          );
        }
      }
    }
    const tooMany = deref(doc, doc.components.responses.TooManyRequests) as {
      headers: Record<string, Json>;
    };
    assert.equal(deref(doc, tooMany.headers['Retry-After']).required, true);
  });

  it('sends the rate-limit headers on every status it marks them required on', async () => {
    const tenant = await newTenant(t.app);
    const category = await createCategory(t.app, tenant);
    const pet = await createPet(t.app, tenant, { categoryId: category.id });
    const post = (payload: unknown, headers: Json = {}) =>
      as(t.app, tenant, {
        method: 'POST',
        url: '/v1/pets',
        payload: payload as Json,
        headers: headers as never,
      });
    const answers = [
      await as(t.app, tenant, { method: 'GET', url: '/v1/pets' }), // 200
      await post({ name: 'Tom', categoryId: category.id }), // 201
      await as(t.app, tenant, { method: 'DELETE', url: `/v1/pets/${pet.id}` }), // 204
      await post({ name: 'Tom', categoryId: category.id, status: 'lost' }), // 400 validation_failed
      await post({ name: 'Tom', categoryId: category.id }, { 'idempotency-key': '' }), // 400
      await as(t.app, tenant, {
        method: 'POST',
        url: '/v1/pets',
        headers: { 'content-type': 'application/json' },
        payload: '{',
      }), // 400 invalid_json
      await t.app.inject({
        method: 'GET',
        url: '/v1/pets',
        headers: { authorization: 'Bearer nope' },
      }), // 401
      await as(t.app, tenant, { method: 'GET', url: `/v1/pets/${pet.id}` }), // 404 (deleted)
      await as(t.app, tenant, { method: 'GET', url: '/v1/no-such-thing' }), // 404 route_not_found
      await as(t.app, tenant, { method: 'DELETE', url: `/v1/categories/${category.id}` }), // 204
      await as(t.app, tenant, {
        method: 'POST',
        url: '/v1/pets',
        payload: { name: 'x'.repeat(200 * 1024), categoryId: 1 },
      }), // 413
      await post({ name: 'A', categoryId: 1 }, { 'idempotency-key': 'k1' }),
      await post({ name: 'B', categoryId: 1 }, { 'idempotency-key': 'k1' }), // 422
    ];
    const statuses = answers.map((a) => a.statusCode);
    for (const expected of [200, 201, 204, 400, 401, 404, 413, 422]) {
      assert.ok(statuses.includes(expected), `no ${expected} among ${statuses.join(', ')}`);
    }
    // A malformed Host is refused before anything, counting included: 400 is not marked.
    const host = await as(t.app, tenant, {
      method: 'GET',
      url: '/v1/pets',
      headers: { host: 'a b' },
    });
    assert.equal(host.statusCode, 400);
    assert.equal(host.headers['x-ratelimit-limit'], undefined);
    // 409: a category that still has pets.
    const other = await createCategory(t.app, tenant, 'Cats');
    await createPet(t.app, tenant, { categoryId: other.id });
    answers.push(await as(t.app, tenant, { method: 'DELETE', url: `/v1/categories/${other.id}` }));
    assert.equal(answers.at(-1)?.statusCode, 409);
    for (const answer of answers) {
      for (const name of RATE_LIMIT) {
        assert.ok(
          answer.headers[name.toLowerCase()],
          `${answer.statusCode} ${answer.body.slice(0, 80)}: no ${name}`,
        );
      }
    }
  });

  it('sends headers as their components describe them', async () => {
    const tenant = await newTenant(t.app);
    const category = await createCategory(t.app, tenant);
    await createPet(t.app, tenant, { categoryId: category.id });
    const created = await as(t.app, tenant, {
      method: 'POST',
      url: '/v1/pets',
      payload: { name: 'Tom', categoryId: category.id },
    });
    const page = await as(t.app, tenant, { method: 'GET', url: '/v1/pets?limit=1' });
    const deprecated = await as(t.app, tenant, { method: 'GET', url: '/v1/pets/1' });
    const message = await as(t.app, tenant, {
      method: 'POST',
      url: '/messages',
      payload: { message: 'Hello, store!' },
    });
    const checks: Array<[LightMyRequestResponse, string, string]> = [
      ...[created, page, deprecated, message].flatMap((answer) =>
        RATE_LIMIT.map((name) => [answer, name, name] as [LightMyRequestResponse, string, string]),
      ),
      [created, 'Location', 'Location'],
      [message, 'Location', 'Location'],
      [page, 'Link', 'Link'],
      [deprecated, 'Deprecation', 'Deprecation'],
      [deprecated, 'Sunset', 'Sunset'],
      [deprecated, 'Link', 'DeprecationLink'],
    ];
    for (const [answer, header, component] of checks) {
      const raw = answer.headers[header.toLowerCase()];
      assert.equal(typeof raw, 'string', `${answer.statusCode}: no ${header}`);
      const { schema } = doc.components.headers[component] as { schema: Json };
      const value = schema.type === 'integer' ? Number(raw) : raw;
      const validate = validatorOf(schema);
      assert.ok(validate(value), `${header} ${String(raw)}: ${ajv.errorsText(validate.errors)}`);
    }
  });

  it('documents Idempotency-Key on every POST, with its errors and Idempotent-Replayed', () => {
    const posts = ops.filter((o) => o.method === 'post');
    assert.equal(posts.length, 12, posts.map((o) => o.label).join(', '));
    const parameter = doc.components.parameters.IdempotencyKey as {
      in: string;
      name: string;
      required: boolean;
      schema: Json;
    };
    assert.deepEqual(
      [parameter.in, parameter.name, parameter.required],
      ['header', 'Idempotency-Key', false],
    );
    assert.equal(parameter.schema.maxLength, 255);
    const codesOf = (op: Op, status: string) =>
      String(deref(doc, op.operation.responses[status] ?? {}).description ?? '');
    for (const op of ops) {
      const refs = (op.operation.parameters ?? []).map((p) => p.$ref);
      const has = refs.includes('#/components/parameters/IdempotencyKey');
      assert.equal(has, op.method === 'post', `${op.label}: Idempotency-Key`);
      if (op.method !== 'post') continue;
      assert.match(codesOf(op, '400'), /`invalid_idempotency_key`/, op.label);
      assert.match(codesOf(op, '409'), /`idempotency_key_in_use`/, op.label);
      assert.match(codesOf(op, '422'), /`idempotency_key_mismatch`/, op.label);
      const conflict = deref(doc, op.operation.responses['409']) as { headers: Json };
      assert.ok(conflict.headers['Retry-After'], `${op.label} 409: no Retry-After`);
      const success = Object.entries(op.operation.responses).find(([s]) => s.startsWith('2'));
      assert.ok(success, op.label);
      const headers = (deref(doc, success[1]) as { headers: Json }).headers;
      assert.ok(headers['Idempotent-Replayed'], `${op.label}: no Idempotent-Replayed`);
    }
  });

  it('keeps answering a malformed Idempotency-Key with 400 invalid_idempotency_key', async () => {
    const tenant = await newTenant(t.app);
    for (const key of ['', 'x'.repeat(256), 'caf\u00e9']) {
      const res = await as(t.app, tenant, {
        method: 'POST',
        url: '/v1/categories',
        payload: { name: 'Dogs' },
        headers: { 'idempotency-key': key },
      });
      assert.equal(res.statusCode, 400);
      assert.equal(errorCode(res), 'invalid_idempotency_key');
    }
  });

  it('names the allowed values when an enum is not one of them', async () => {
    const tenant = await newTenant(t.app);
    const category = await createCategory(t.app, tenant);
    const body = await as(t.app, tenant, {
      method: 'POST',
      url: '/v1/pets',
      payload: { name: 'Rex', categoryId: category.id, status: 'lost' },
    });
    assert.equal(errorCode(body), 'validation_failed');
    assert.equal(
      body.json().message,
      'Invalid body/status: must be one of: available, pending, sold. ' +
        ERRORS.validation_failed.next,
    );
    const query = await as(t.app, tenant, { method: 'GET', url: '/v1/store/orders?status=lost' });
    assert.equal(errorCode(query), 'validation_failed');
    assert.equal(
      query.json().details[0].message,
      'must be one of: placed, approved, delivered, cancelled',
    );
  });

  it('gives openapi-typescript named types: components["schemas"]["Pet"] and ["Error"]', async () => {
    const types = astToString(await openapiTS(structuredClone(doc) as never));
    for (const name of ['Pet', 'Error', 'NewPet', 'Order', 'Account', 'NewApiKey']) {
      assert.match(types, new RegExp(`\\n {8}${name}: \\{`), `no ${name} type`);
    }
    // getPet's answer is the Pet type, not an inline copy of it.
    const getPet = types.slice(types.indexOf('    getPet: {'));
    const ok = getPet.slice(getPet.indexOf('200: {'), getPet.indexOf('400: '));
    assert.match(ok, /"application\/json": components\["schemas"\]\["Pet"\];/);
    // Each event type's schema and webhook added ~500 (issue 54); four event types and three
    // operations more (issue 55) ~600.
    assert.ok(types.split('\n').length < 6500, `${types.split('\n').length} lines of types`);
  });
});

describe('Postman collection', () => {
  let t: TestApp;
  let doc: Doc;

  before(async () => {
    t = await startApp();
    doc = (await t.app.inject({ method: 'GET', url: '/v1/openapi.json' })).json();
  });
  after(() => t.close());

  it('is served at /v1/postman.json without a key, made from the document', {
    timeout: 60_000,
  }, async () => {
    const res = await t.app.inject({ method: 'GET', url: '/v1/postman.json' });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    const collection = res.json();
    assert.equal(
      collection.info.schema,
      'https://schema.getpostman.com/json/collection/v2.1.0/collection.json',
    );

    const variables = Object.fromEntries(
      (collection.variable as Array<{ key: string; value: string }>).map((v) => [v.key, v.value]),
    );
    assert.equal(variables.baseUrl, (doc.servers as Array<{ url: string }>)[0]?.url);
    assert.equal(variables.apiKey, '');
    assert.ok('messagesUrl' in variables && 'email' in variables && 'password' in variables);
    assert.deepEqual(collection.auth, {
      type: 'bearer',
      bearer: [{ key: 'token', value: '{{apiKey}}', type: 'string' }],
    });

    // Every operation of the document, once, at its path on its server.
    const requests: Array<{
      name: string;
      request: Json & { url: { host: string[]; path: string[] } };
    }> = [];
    const collect = (items: Array<Json>) => {
      for (const item of items) {
        if (item.item) collect(item.item as Json[]);
        else requests.push(item as never);
      }
    };
    collect(collection.item);
    const seen = requests.map(({ request }) => {
      const path = `/${request.url.path.map((p) => p.replace(/^:(.+)$/, '{$1}')).join('/')}`;
      const host = request.url.host.join('');
      assert.equal(host, path.startsWith('/messages') ? '{{messagesUrl}}' : '{{baseUrl}}', path);
      return `${String(request.method).toLowerCase()} ${path}`;
    });
    const documented = Object.entries(doc.paths).flatMap(([path, item]) =>
      METHODS.filter((m) => item[m]).map((m) => `${m} ${path}`),
    );
    assert.deepEqual([...seen].sort(), [...documented].sort());

    // Bodies use the ids earlier requests answered with; every POST sends a fresh
    // Idempotency-Key. (Running it is test/postman.test.ts.)
    const createPet = requests.find(
      (r) => r.request.method === 'POST' && r.request.url.path.join('/') === 'pets',
    );
    assert.ok(createPet);
    assert.deepEqual(
      JSON.parse(String((createPet.request.body as Json).raw).replace('{{categoryId}}', '7')),
      { name: 'Rex', categoryId: 7 },
    );
    for (const { request } of requests.filter((r) => r.request.method === 'POST')) {
      const header = (
        request.header as Array<{ key: string; value: string; disabled?: boolean }>
      ).find((h) => h.key === 'Idempotency-Key');
      assert.deepEqual(
        [header?.value, header?.disabled],
        ['{{$guid}}', false],
        request.url.path.join('/'),
      );
    }
    const keys = requests.find(
      (r) => r.request.method === 'GET' && r.request.url.path.join('/') === 'keys',
    );
    assert.equal((keys?.request.auth as Json | undefined)?.type, 'basic');
    const signUp = requests.find(
      (r) => r.request.method === 'POST' && r.request.url.path.join('/') === 'accounts',
    );
    assert.equal((signUp?.request.auth as Json | undefined)?.type, 'noauth');

    // Linked from the docs page, which shows the document's description.
    assert.match(doc.info.description, /\[Postman collection\]\(\/v1\/postman\.json\)/);
    const again = await t.app.inject({ method: 'GET', url: '/v1/postman.json' });
    assert.equal(again.body, res.body, 'made once, served alike');
  });

  it('works when imported: a request of it, sent as written, is answered', {
    timeout: 60_000,
  }, async () => {
    const collection = (await t.app.inject({ method: 'GET', url: '/v1/postman.json' })).json();
    const tenant = await newTenant(t.app);
    const items = JSON.stringify(collection.item);
    assert.ok(items.includes('"{{baseUrl}}"'));
    // "Add a category", with the variables filled in as Postman would.
    const find = (items: Json[]): Json | undefined => {
      for (const item of items) {
        const found = item.item ? find(item.item as Json[]) : item;
        if (
          (found?.request as Json | undefined)?.method === 'POST' &&
          JSON.stringify(found?.request).includes('"categories"')
        ) {
          return found;
        }
      }
      return undefined;
    };
    const item = find(collection.item);
    assert.ok(item);
    const request = item.request as {
      body: { raw: string };
      header: Array<{ key: string; value: string }>;
    };
    const res = await as(t.app, tenant, {
      method: 'POST',
      url: '/v1/categories',
      payload: request.body.raw,
      headers: Object.fromEntries(
        request.header.map((h) => [
          h.key.toLowerCase(),
          h.value.replace('{{$guid}}', crypto.randomUUID()),
        ]),
      ),
    });
    assert.equal(res.statusCode, 201, res.body);
  });
});
