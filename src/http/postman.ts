import type { FastifyInstance } from 'fastify';

/**
 * A Postman collection (v2.1) generated from the OpenAPI document by Postman's own converter
 * (openapi-to-postmanv2), served at GET /v1/postman.json. Made once per process, on first ask
 * (the converter takes a second and is loaded only then), and finished here into a collection
 * that runs as it is (Postman's Runner, newman), top to bottom: folders in RUN's order, ids
 * kept in variables, tests from the document on every request
 * (docs/decisions/0057-postman-collection.md).
 */

type Json = Record<string, unknown>;

interface PostmanVariable {
  key: string;
  value: string;
  type?: string;
  description?: string;
}
interface PostmanQuery {
  key: string;
  value: string;
  disabled?: boolean;
}
interface PostmanUrl {
  host?: string[];
  path?: string[];
  query?: PostmanQuery[];
  variable?: PostmanVariable[];
}
interface PostmanRequest {
  name?: string;
  method: string;
  url: PostmanUrl;
  header?: Array<{ key: string; value: string; disabled?: boolean }>;
  body?: { mode?: string; raw?: string; options?: Json };
  auth?: unknown;
}
interface PostmanEvent {
  listen: 'prerequest' | 'test';
  script: { type: 'text/javascript'; exec: string[] };
}
interface PostmanItem {
  name: string;
  description?: unknown;
  item?: PostmanItem[];
  request?: PostmanRequest;
  response?: Array<{ originalRequest?: PostmanRequest }>;
  event?: PostmanEvent[];
}
export interface PostmanCollection {
  info: Json & { description?: { content?: string } | string };
  item: PostmanItem[];
  variable?: PostmanVariable[];
  auth?: unknown;
}

interface Schema {
  $ref?: string;
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  anyOf?: Schema[];
  oneOf?: Schema[];
  required?: string[];
  properties?: Record<string, Schema>;
  items?: Schema;
  title?: string;
}

interface Operation {
  security?: Array<Record<string, string[]>>;
  parameters?: Json[];
  requestBody?: { content?: Record<string, { example?: unknown }> };
  responses?: Record<
    string,
    { content?: Record<string, { schema?: Schema }>; headers?: Record<string, unknown> }
  >;
  deprecated?: boolean;
}

interface Document {
  servers?: Array<{ url: string }>;
  paths: Record<string, Json & { servers?: Array<{ url: string }> }>;
  components?: { parameters?: Record<string, Json>; schemas?: Record<string, Schema> };
}

/** One request of the run: the operation, and what the run sends and expects of it. */
interface Step {
  /** `METHOD /path`, as the document names the operation. */
  operation: string;
  /** The request's name, when it may show an error the run accepts (it says which). */
  name?: string;
  /** The body, in place of the document's example. `{{…}}` of NUMERIC ids go in unquoted. */
  body?: unknown;
  /** Error answers the run accepts besides the success: status → the error's code. */
  accepts?: Record<number, string>;
  /** Variables set from a success's body: variable → field. */
  capture?: Record<string, string>;
  /** Fields of a success's body, and the value each must have. */
  expect?: Record<string, unknown>;
  /** Fields of a success's body that must equal a variable: field → variable. */
  same?: Record<string, string>;
  prerequest?: string[];
  /** More test lines, after those made from the document. */
  tests?: string[];
}

const MESSAGES = 'messagesUrl';
/** Ids that are numbers in bodies: `{"petId": {{petId}}}`, not `"{{petId}}"`. */
const NUMERIC = ['categoryId', 'petId', 'orderId'];

const SIGN_UP = [
  '// With a key of yours, the run works in its account and signs nobody up.',
  "if (pm.variables.get('apiKey')) {",
  '  pm.execution.skipRequest();',
  '} else {',
  '  // Without an email and a password of yours, the run makes them (and keeps them).',
  "  if (!pm.variables.get('email')) {",
  "    const unique = Date.now().toString(36) + '-' + Math.random().toString(36).slice(2, 10);",
  "    pm.collectionVariables.set('email', 'postman-' + unique + '@example.com');",
  '  }',
  "  if (!pm.variables.get('password')) {",
  "    pm.collectionVariables.set('password', pm.variables.replaceIn('{{$guid}}'));",
  '  }',
  '}',
];
/** Keys are managed signed in with the account's email and password: given a key alone, the
 * run has neither, and makes, lists and revokes no key. */
const WITH_PASSWORD = [
  "if (!pm.variables.get('email') || !pm.variables.get('password')) {",
  '  pm.execution.skipRequest();',
  '}',
];
const USE_NEW_KEY = [
  '// Without a key of yours, the run uses the one it made (and forgets it once revoked).',
  "if (pm.response.code === 201 && !pm.variables.get('apiKey')) {",
  "  pm.collectionVariables.set('apiKey', pm.response.json().key);",
  "  pm.collectionVariables.set('apiKeyId', pm.response.json().id);",
  '}',
];
/** A reset empties the account the run works in: sent only when `allowReset` says so. */
const ONLY_IF_ALLOWED = [
  "if (pm.variables.get('allowReset') !== 'true') {",
  '  pm.execution.skipRequest();',
  '}',
];
const FORGET_KEY = [
  "if (pm.response.code === 204 && pm.variables.get('apiKeyId') === pm.variables.get('keyId')) {",
  "  pm.collectionVariables.set('apiKey', '');",
  "  pm.collectionVariables.set('apiKeyId', '');",
  '}',
];

/**
 * The run: folders (the converter's, by tag, and a last one that cleans up) and their requests,
 * in an order that works on a fresh account and on one that holds data. Within a folder:
 * create, then read, list, change; deletes wait for the last folder, in the order the rules
 * allow (a pet once its order is closed, a category once it has no pets, the key last).
 */
const RUN: Array<{ folder: string; description?: string; steps: Step[] }> = [
  {
    folder: 'Accounts',
    steps: [
      {
        operation: 'POST /accounts',
        name: 'Create an account (not with your key; 409 if it exists)',
        body: { email: '{{email}}', password: '{{password}}' },
        accepts: { 409: 'email_taken' },
        prerequest: SIGN_UP,
      },
    ],
  },
  {
    folder: 'API keys',
    steps: [
      {
        operation: 'POST /keys',
        body: { name: 'postman' },
        capture: { keyId: 'id' },
        prerequest: WITH_PASSWORD,
        tests: USE_NEW_KEY,
      },
      { operation: 'GET /keys', prerequest: WITH_PASSWORD },
      {
        operation: 'GET /account',
        tests: [
          "pm.collectionVariables.set('requestId', pm.response.headers.get('X-Request-Id'));",
          // Given a key alone, the run knows no email to compare.
          "if (pm.response.code === 200 && pm.variables.get('email')) {",
          "  pm.test('email is email', function () {",
          "    const email = String(pm.variables.get('email')).trim().toLowerCase();",
          '    pm.expect(pm.response.json().email).to.equal(email);',
          '  });',
          '}',
        ],
      },
    ],
  },
  {
    folder: 'Categories',
    steps: [
      { operation: 'POST /categories', body: { name: 'Dogs' }, capture: { categoryId: 'id' } },
      { operation: 'GET /categories' },
      { operation: 'GET /categories/{categoryId}', same: { id: 'categoryId' } },
      { operation: 'PATCH /categories/{categoryId}', body: { name: 'Hounds' } },
    ],
  },
  {
    folder: 'Pets',
    steps: [
      {
        operation: 'POST /pets',
        body: { name: 'Rex', categoryId: '{{categoryId}}' },
        capture: { petId: 'id' },
        expect: { status: 'available' },
      },
      { operation: 'GET /pets' },
      { operation: 'GET /pets/{petId}', same: { id: 'petId' } },
      { operation: 'PATCH /pets/{petId}', body: { name: 'Rex the Second' } },
    ],
  },
  {
    folder: 'Store',
    steps: [
      {
        operation: 'POST /store/orders',
        body: { petId: '{{petId}}' },
        capture: { orderId: 'id' },
        expect: { status: 'placed' },
      },
      { operation: 'GET /store/orders' },
      { operation: 'GET /store/orders/{orderId}', same: { id: 'orderId' } },
      // Cancelled, the pet is available again, and can be removed at the end.
      {
        operation: 'PATCH /store/orders/{orderId}',
        body: { status: 'cancelled' },
        expect: { status: 'cancelled' },
      },
      { operation: 'GET /store/inventory' },
    ],
  },
  { folder: 'Events', steps: [{ operation: 'GET /events' }] },
  {
    folder: 'Webhooks',
    steps: [
      {
        operation: 'POST /webhooks',
        body: { url: '{{webhookUrl}}', events: ['*'] },
        capture: { webhookId: 'id' },
      },
      { operation: 'GET /webhooks' },
      { operation: 'GET /webhooks/{webhookId}', same: { id: 'webhookId' } },
      { operation: 'PATCH /webhooks/{webhookId}', body: { enabled: true } },
      { operation: 'POST /webhooks/{webhookId}/rotate-secret' },
      { operation: 'POST /webhooks/{webhookId}/test', capture: { deliveryId: 'id' } },
      { operation: 'GET /webhooks/{webhookId}/deliveries' },
      {
        operation: 'POST /webhooks/{webhookId}/deliveries/{deliveryId}/retry',
        name: 'Send a delivery again (409 while it is being sent)',
        accepts: { 409: 'delivery_in_progress' },
      },
      // Since now: what failed since then, which is nothing; a real recovery names the outage.
      { operation: 'POST /webhooks/{webhookId}/recover', body: { since: '{{$isoTimestamp}}' } },
    ],
  },
  {
    folder: 'Messages',
    steps: [
      {
        operation: 'POST /messages',
        body: { message: 'Hello, store!' },
        capture: { messageId: 'id' },
      },
      { operation: 'GET /messages/{messageId}', same: { id: 'messageId' } },
    ],
  },
  {
    folder: 'Requests',
    steps: [
      { operation: 'GET /requests' },
      {
        operation: 'GET /requests/{requestId}',
        same: { id: 'requestId' },
        // An entry is written within a second of its answer.
        prerequest: ['setTimeout(function () {}, 1000);'],
      },
      { operation: 'GET /requests/stats' },
    ],
  },
  {
    folder: 'Clean up',
    description:
      'Removes everything the run made, its key last. With `allowReset` set to `true`, a ' +
      'reset then empties the account of its test data too.',
    steps: [
      // Sent more than a second ago (the request log's wait): settled, so it can go.
      { operation: 'DELETE /messages/{messageId}' },
      { operation: 'DELETE /store/orders/{orderId}' },
      { operation: 'DELETE /webhooks/{webhookId}' },
      { operation: 'DELETE /pets/{petId}' },
      { operation: 'DELETE /categories/{categoryId}' },
      // After the run's own removals (sent first, a reset would leave them 404s), and before
      // the key it is sent with goes.
      { operation: 'POST /sandbox/reset', prerequest: ONLY_IF_ALLOWED },
      { operation: 'DELETE /keys/{keyId}', prerequest: WITH_PASSWORD, tests: FORGET_KEY },
    ],
  },
];

/** Variables the run sets, and what each holds. */
const CAPTURED: Record<string, string> = {
  apiKeyId: 'Set by the run: the id of `apiKey` when the run made it (revoking it empties both).',
  keyId: 'Set by the run: the id of the API key it made.',
  categoryId: 'Set by the run: the category it made.',
  petId: 'Set by the run: the pet it made.',
  orderId: 'Set by the run: the order it placed.',
  webhookId: 'Set by the run: the webhook endpoint it made.',
  deliveryId: 'Set by the run: the test delivery it sent.',
  messageId: 'Set by the run: the message it sent.',
  requestId: 'Set by the run: the `X-Request-Id` of its `GET /account`.',
};

/** The items of `items` that are requests, folders walked into, in order. */
function requestItems(items: PostmanItem[]): Array<{ item: PostmanItem; request: PostmanRequest }> {
  return items.flatMap((item) => [
    ...(item.request ? [{ item, request: item.request }] : []),
    ...requestItems(item.item ?? []),
  ]);
}

/** `/pets/:petId` is `/pets/{petId}`. */
function pathOf(url: PostmanUrl): string {
  return `/${(url.path ?? []).map((p) => p.replace(/^:(.+)$/, '{$1}')).join('/')}`;
}

const operationKey = (request: PostmanRequest) => `${request.method} ${pathOf(request.url)}`;

/** The operation a converted request stands for. */
function operationOf(doc: Document, request: PostmanRequest): Operation | undefined {
  return doc.paths[pathOf(request.url)]?.[request.method.toLowerCase()] as Operation | undefined;
}

function parametersOf(doc: Document, operation: Operation): Json[] {
  return (operation.parameters ?? []).map((p) => {
    const ref = typeof p.$ref === 'string' ? p.$ref.split('/').pop() : undefined;
    return ref ? (doc.components?.parameters?.[ref] ?? p) : p;
  });
}

/** A JavaScript string literal, in single quotes. */
const quote = (s: string) => `'${s.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;

const text = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value));

/** A body as JSON text, the NUMERIC ids' `{{…}}` unquoted. */
function rawBody(value: unknown): string {
  return JSON.stringify(value, null, 2).replace(
    new RegExp(`"(\\{\\{(?:${NUMERIC.join('|')})\\}\\})"`, 'g'),
    '$1',
  );
}

/** The host, path variables and query values of a request, or of a saved example's request. */
function finishUrl(doc: Document, operation: Operation, url: PostmanUrl): void {
  // The converter names each per-path server's address a variable of its own.
  if (url.host?.some((h) => h !== '{{baseUrl}}')) url.host = [`{{${MESSAGES}}}`];
  // Every path id is one an earlier request of the run answered with.
  for (const variable of url.variable ?? []) variable.value = `{{${variable.key}}}`;
  const examples = new Map<string, unknown>();
  for (const parameter of parametersOf(doc, operation)) {
    if (parameter.example !== undefined) examples.set(String(parameter.name), parameter.example);
  }
  for (const query of url.query ?? []) {
    query.value = examples.has(query.key) ? text(examples.get(query.key)) : '';
  }
}

function finishRequest(doc: Document, item: PostmanItem): void {
  const request = item.request;
  const operation = request && operationOf(doc, request);
  if (!request || !operation) return;
  finishUrl(doc, operation, request.url);
  for (const example of item.response ?? []) {
    if (example.originalRequest) finishUrl(doc, operation, example.originalRequest.url);
  }

  const schemes = (operation.security ?? []).flatMap((s) => Object.keys(s));
  if (schemes.includes('basicAuth')) {
    request.auth = {
      type: 'basic',
      basic: [
        { key: 'username', value: '{{email}}', type: 'string' },
        { key: 'password', value: '{{password}}', type: 'string' },
      ],
    };
  } else if (schemes.length === 0) {
    request.auth = { type: 'noauth' };
  } else {
    // Inherited from the collection: Bearer {{apiKey}}.
    delete request.auth;
  }

  for (const header of request.header ?? []) {
    if (header.key === 'Idempotency-Key') {
      header.value = '{{$guid}}';
      header.disabled = false;
    }
  }
  const example = operation.requestBody?.content?.['application/json']?.example;
  if (request.body && example !== undefined) {
    request.body.raw = JSON.stringify(example, null, 2);
  }
}

function resolve(doc: Document, schema: Schema): Schema {
  let s = schema;
  for (let depth = 0; s.$ref && depth < 8; depth++) {
    s = doc.components?.schemas?.[s.$ref.split('/').pop() ?? ''] ?? {};
  }
  return s;
}

const TYPE_TEST: Record<string, string> = {
  integer: 'Number.isInteger(v)',
  number: "typeof v === 'number'",
  string: "typeof v === 'string'",
  boolean: "typeof v === 'boolean'",
  array: 'Array.isArray(v)',
  object: "(typeof v === 'object' && v !== null && !Array.isArray(v))",
  null: 'v === null',
};

/** A JavaScript test of `v` against the schema's type, or undefined when any value fits. */
function predicate(doc: Document, schema: Schema): string | undefined {
  const s = resolve(doc, schema);
  if (s.const !== undefined) return `v === ${JSON.stringify(s.const)}`;
  if (s.enum) return `${JSON.stringify(s.enum)}.includes(v)`;
  const union = s.anyOf ?? s.oneOf;
  if (union) {
    const parts = union.map((part) => predicate(doc, part));
    return parts.every((p) => p !== undefined) ? parts.join(' || ') : undefined;
  }
  const types = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
  const parts = types.map((t) => TYPE_TEST[t]);
  return parts.length > 0 && parts.every((p) => p !== undefined) ? parts.join(' || ') : undefined;
}

const CHAI_TYPE: Record<string, string> = {
  integer: "to.be.a('number').that.satisfies(Number.isInteger)",
  number: "to.be.a('number')",
  string: "to.be.a('string')",
  boolean: "to.be.a('boolean')",
  array: "to.be.an('array')",
  object: "to.be.an('object')",
  null: 'to.equal(null)',
};

/** The line that checks `target.field`'s type, as readable as chai makes it. */
function fieldCheck(doc: Document, target: string, field: string, schema: Schema): string[] {
  const s = resolve(doc, schema);
  const value = /^[A-Za-z_$][\w$]*$/.test(field)
    ? `${target}.${field}`
    : `${target}[${JSON.stringify(field)}]`;
  const expect = `pm.expect(${value}, ${quote(field)})`;
  if (s.enum) return [`${expect}.to.be.oneOf(${JSON.stringify(s.enum)});`];
  if (typeof s.type === 'string' && CHAI_TYPE[s.type]) return [`${expect}.${CHAI_TYPE[s.type]};`];
  const test = predicate(doc, s);
  return test ? [`${expect}.to.satisfy((v) => ${test});`] : [];
}

/**
 * Checks that `target` has the schema's required fields, each of its type. Of one of several
 * objects (an Event, by its `type`), the fields they all require, each of any of their types.
 */
function objectChecks(doc: Document, target: string, schema: Schema): string[] {
  const s = resolve(doc, schema);
  const variants = s.oneOf?.map((variant) => resolve(doc, variant));
  const required = variants
    ? (variants[0]?.required ?? []).filter((f) => variants.every((v) => v.required?.includes(f)))
    : (s.required ?? []);
  if (required.length === 0) return fieldCheck(doc, target, 'body', s);
  const fieldSchema = (field: string): Schema =>
    variants
      ? { anyOf: variants.map((variant) => variant.properties?.[field] ?? {}) }
      : (s.properties?.[field] ?? {});
  return [
    `pm.expect(${target}).to.be.an('object');`,
    `pm.expect(${target}).to.include.all.keys(${required.map(quote).join(', ')});`,
    ...required.flatMap((field) => fieldCheck(doc, target, field, fieldSchema(field))),
  ];
}

/** A pm.test of the answer's body against the document's schema for it. */
function shapeTest(doc: Document, schema: Schema | undefined): string[] {
  if (!schema) {
    return [
      `pm.test('no body', function () {`,
      `  pm.expect(pm.response.text()).to.equal('');`,
      '});',
    ];
  }
  const s = resolve(doc, schema);
  const items = s.items && resolve(doc, s.items);
  const lines = items
    ? [
        `pm.expect(body).to.be.an('array');`,
        'for (const item of body) {',
        ...objectChecks(doc, 'item', items).map((l) => `  ${l}`),
        '}',
      ]
    : objectChecks(doc, 'body', s);
  const noun = (items ?? s).title ?? 'body';
  const title = `${items ? 'a list of' : /^[AEIOU]/.test(noun) ? 'an' : 'a'} ${noun}`;
  const fields = (items ?? s).required ?? [];
  const name = fields.length ? `${title} (${fields.join(', ')})` : title;
  return [
    `pm.test(${quote(name)}, function () {`,
    '  const body = pm.response.json();',
    ...lines.map((l) => `  ${l}`),
    '});',
  ];
}

const indent = (lines: string[]) => lines.map((l) => `  ${l}`);

/** The test script of a step: status, shape, headers and values, then the captures. */
function testScript(doc: Document, operation: Operation, step: Step): string[] {
  const responses = operation.responses ?? {};
  const success = Number(Object.keys(responses).find((s) => s.startsWith('2')) ?? 200);
  const errors = Object.entries(step.accepts ?? {}).map(([s, code]) => [Number(s), code] as const);
  const statuses = [success, ...errors.map(([s]) => s)];
  const answer = responses[success];
  const lines =
    errors.length === 0
      ? [`pm.test('answers ${success}', function () {`, `  pm.response.to.have.status(${success});`]
      : [
          `pm.test(${quote(`answers ${success}, or ${errors.map(([s, c]) => `${s} ${c}`).join(', ')}`)}, function () {`,
          `  pm.expect(pm.response.code).to.be.oneOf(${JSON.stringify(statuses)});`,
        ];
  lines.push('});');

  const ok = shapeTest(doc, answer?.content?.['application/json']?.schema);
  const headers = [
    ...(answer?.headers && 'Location' in answer.headers ? ['Location'] : []),
    ...(operation.deprecated ? ['Deprecation', 'Sunset', 'Link'] : []),
  ];
  if (headers.length > 0) {
    ok.push(
      `pm.test(${quote(`with ${headers.join(', ')}`)}, function () {`,
      ...headers.map((h) => `  pm.response.to.have.header('${h}');`),
      '});',
    );
  }
  const values = [
    ...Object.entries(step.expect ?? {}).map(
      ([field, value]) => `  pm.expect(body.${field}).to.eql(${JSON.stringify(value)});`,
    ),
    ...Object.entries(step.same ?? {}).map(
      ([field, variable]) =>
        `  pm.expect(String(body.${field})).to.equal(String(pm.variables.get(${quote(variable)})));`,
    ),
  ];
  if (values.length > 0) {
    const said = [
      ...Object.entries(step.expect ?? {}).map(([f, v]) => `${f} ${JSON.stringify(v)}`),
      ...Object.entries(step.same ?? {}).map(([f, v]) => `${f} is ${v}`),
    ];
    ok.push(
      `pm.test(${quote(said.join(', '))}, function () {`,
      '  const body = pm.response.json();',
      ...values,
      '});',
    );
  }
  for (const [variable, field] of Object.entries(step.capture ?? {})) {
    ok.push(`pm.collectionVariables.set('${variable}', pm.response.json().${field});`);
  }
  lines.push(`if (pm.response.code === ${success}) {`, ...indent(ok), '}');

  const error = resolve(doc, { $ref: '#/components/schemas/Error' });
  for (const [status, code] of errors) {
    lines.push(
      `if (pm.response.code === ${status}) {`,
      ...indent(shapeTest(doc, error)),
      `  pm.test('code ${code}', function () {`,
      `    pm.expect(pm.response.json().code).to.equal('${code}');`,
      '  });',
      '}',
    );
  }
  return [...lines, ...(step.tests ?? [])];
}

function runStep(doc: Document, item: PostmanItem, step: Step): void {
  const request = item.request;
  const operation = request && operationOf(doc, request);
  if (!request || !operation) return;
  if (step.name) {
    item.name = step.name;
    request.name = step.name;
  }
  if (step.body !== undefined) {
    request.body = { mode: 'raw', raw: rawBody(step.body), options: { raw: { language: 'json' } } };
  }
  const script = (listen: PostmanEvent['listen'], exec: string[]): PostmanEvent => ({
    listen,
    script: { type: 'text/javascript', exec },
  });
  item.event = [
    ...(step.prerequest ? [script('prerequest', step.prerequest)] : []),
    script('test', testScript(doc, operation, step)),
  ];
}

/** The converter's folders (by tag), rearranged into RUN's order; anything RUN does not name
 * runs, with tests made from the document alone, in a folder before the clean-up. */
function arrange(doc: Document, collection: PostmanCollection): void {
  const tagFolders = new Map(collection.item.map((folder) => [folder.name, folder]));
  const requests = new Map(
    requestItems(collection.item).map(({ item, request }) => [operationKey(request), item]),
  );
  const folder = (name: string, description: unknown, steps: Step[]): PostmanItem => ({
    name,
    ...(description === undefined ? {} : { description }),
    item: steps.flatMap((step) => {
      const item = requests.get(step.operation);
      if (!item) return [];
      requests.delete(step.operation);
      runStep(doc, item, step);
      return [item];
    }),
  });
  const folders = RUN.map((run) =>
    folder(run.folder, run.description ?? tagFolders.get(run.folder)?.description, run.steps),
  );
  const rest = [...requests.keys()].map((operation) => ({ operation }));
  if (rest.length > 0) folders.splice(-1, 0, folder('More', undefined, rest));
  collection.item = folders;
}

const runNote = (requests: number) => `Run this collection as it is (Postman's Runner, or
\`newman run\`). Given your \`apiKey\`, it works in that key's account and signs nobody up
(with your \`email\` and \`password\` too, it also makes, lists and revokes a key). Given your
\`email\` and \`password\` alone, it makes a key in your account; given nothing, it signs up
an account first. It then tries every operation in a working order with tests on each answer,
and removes what it made: its message, its order, its webhook endpoint, pet and category, and
its key. What it did stays in the account's events and request log, and an account it signed
up stays (the API closes no account). Ids from answers are kept in
variables (\`{{petId}}\`, …) for the requests that follow. A run is ${requests} requests: on the
Free plan (60 a minute), wait a minute before the next.

`;

/** The collection of the document `doc` (an OpenAPI 3.1 object, not changed). */
export async function postmanCollection(document: object): Promise<PostmanCollection> {
  const doc = document as Document;
  const { default: converter } = await import('openapi-to-postmanv2');
  const collection = await new Promise<PostmanCollection>((done, fail) => {
    converter.convert(
      { type: 'json', data: structuredClone(document) as never },
      {
        folderStrategy: 'Tags',
        parametersResolution: 'Example',
        enableOptionalParameters: false,
        alwaysInheritAuthentication: true,
        includeAuthInfoInExample: false,
      },
      (error, result) => {
        const data = result?.output?.[0]?.data as PostmanCollection | undefined;
        if (error || !result?.result || !data) {
          fail(error ?? new Error(`openapi-to-postmanv2: ${result?.reason ?? 'no collection'}`));
        } else done(data);
      },
    );
  });
  for (const { item } of requestItems(collection.item)) finishRequest(doc, item);
  arrange(doc, collection);
  const description = collection.info.description;
  if (typeof description === 'object' && description.content !== undefined) {
    const requests = collection.item.reduce((n, folder) => n + (folder.item?.length ?? 0), 0);
    description.content = runNote(requests) + description.content;
  }
  const messages = Object.entries(doc.paths).find(([path]) => path.startsWith('/messages'))?.[1]
    .servers?.[0]?.url;
  const variable = (key: string, value: string, description: string, type = 'string') => ({
    key,
    value,
    type,
    description,
  });
  collection.variable = [
    variable('baseUrl', doc.servers?.[0]?.url ?? '', 'The API, with its /v1 prefix.'),
    variable(MESSAGES, messages ?? '', 'The quickstart messages server (no prefix).'),
    variable(
      'apiKey',
      '',
      'Your API key (as_test_… or as_live_…), from the portal or POST /v1/keys: the run ' +
        'then works in its account and signs nobody up. Empty, the run uses the key it makes.',
      'secret',
    ),
    variable(
      'email',
      '',
      'Your sign-in email (key management). Empty, the run signs up a new one; with ' +
        '`apiKey` set, it manages no key instead.',
    ),
    variable('password', '', 'Your password (key management). Empty, the run makes one.', 'secret'),
    variable(
      'webhookUrl',
      'http://127.0.0.1:9/animal-store-hook',
      'Where the webhook endpoint the run makes sends events: an https URL of yours in ' +
        'production. Development also allows loopback http, as this default (which nothing ' +
        'answers).',
    ),
    variable(
      'allowReset',
      '',
      '`true` sends "Reset the test data", which empties the account the run works in; ' +
        'anything else skips it.',
    ),
    ...Object.entries(CAPTURED).map(([key, description]) => variable(key, '', description)),
  ];
  collection.auth = {
    type: 'bearer',
    bearer: [{ key: 'token', value: '{{apiKey}}', type: 'string' }],
  };
  return collection;
}

/** GET /v1/postman.json: no key needed, not counted, like the OpenAPI document. */
export function registerPostman(app: FastifyInstance): void {
  let made: Promise<string> | undefined;
  app.get('/v1/postman.json', { schema: { hide: true } }, async (request, reply) => {
    made ??= postmanCollection(app.swagger()).then((collection) => JSON.stringify(collection));
    let body: string;
    try {
      body = await made;
    } catch (error) {
      made = undefined;
      request.log.error({ err: error }, 'the Postman collection could not be made');
      throw error;
    }
    return reply
      .type('application/json; charset=utf-8')
      .header('content-disposition', 'inline; filename="animal-store.postman_collection.json"')
      .send(body);
  });
}
