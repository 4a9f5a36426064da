import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import type { FastifyInstance, HTTPMethods } from 'fastify';
import { lintOpenApi } from '../scripts/lint-openapi.js';
import { ERRORS } from '../src/errors.js';
import { startApp, type TestApp } from './helpers.js';

/** The operations the service offers; the document must describe each of them. */
const EXPECTED_OPERATIONS = [
  'placeOrder',
  'listOrders',
  'getOrder',
  'updateOrder',
  'getInventory',
  'deleteOrder',
  'sendMessage',
  'getMessage',
  'deleteMessage',
  'createAccount',
  'createApiKey',
  'listApiKeys',
  'revokeApiKey',
  'getAccount',
  'listPets',
  'createPet',
  'getPet',
  'updatePet',
  'deletePet',
  'listCategories',
  'createCategory',
  'getCategory',
  'updateCategory',
  'deleteCategory',
  'listEvents',
  'createWebhook',
  'listWebhooks',
  'getWebhook',
  'updateWebhook',
  'deleteWebhook',
  'rotateWebhookSecret',
  'testWebhook',
  'listWebhookDeliveries',
  'retryWebhookDelivery',
  'recoverWebhook',
  'listRequests',
  'getRequest',
  'getRequestStats',
  'resetSandbox',
];
/** Operations that need no credentials at all. */
const PUBLIC_OPERATIONS = ['createAccount'];
/** Routes served under /v1 that are deliberately left out of the document. */
const UNDOCUMENTED_ROUTES = [
  'GET /v1/openapi.json',
  'GET /v1/postman.json',
  // The messages, answered under /v1 too for generated clients (decision 0074).
  'POST /v1/messages',
  'GET /v1/messages/:messageId',
  'DELETE /v1/messages/:messageId',
];

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/**
 * Spectral runs as a process of its own for ~10 s (both rulesets): started when this file is
 * loaded (npm test loads every file first), it runs beside the other files' tests, and its test
 * below only reads the outcome.
 */
const linting = lintOpenApi().catch((error: unknown) => ({
  exitCode: 1,
  output: `lintOpenApi failed: ${error instanceof Error ? error.stack : String(error)}`,
}));

interface Schema {
  $ref?: string;
  type?: string | string[];
  required?: string[];
  properties?: Record<string, Schema>;
}
interface MediaType {
  schema?: Schema;
}
interface Response {
  $ref?: string;
  description: string;
  content?: Record<string, MediaType>;
}
interface Parameter {
  $ref?: string;
  in: string;
  name: string;
  required?: boolean;
}
type SecurityRequirement = Record<string, string[]>;
interface Operation {
  operationId?: string;
  tags?: string[];
  deprecated?: boolean;
  security?: SecurityRequirement[];
  parameters?: Parameter[];
  requestBody?: unknown;
  responses?: Record<string, Response>;
}
interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string };
  tags?: { name: string }[];
  security?: SecurityRequirement[];
  paths: Record<string, Record<string, unknown>>;
  components?: {
    securitySchemes?: Record<string, { type: string; scheme?: string }>;
  };
}

interface DocumentedOperation {
  method: string;
  path: string;
  label: string;
  operation: Operation;
  parameters: Parameter[];
  responses: [status: string, response: Response][];
}

/** Follows local `$ref`s (`#/components/…`), the only kind the document may use. */
function deref<T extends { $ref?: string }>(doc: OpenApiDocument, value: T): T {
  let current: T = value;
  for (let hops = 0; current.$ref !== undefined; hops++) {
    const ref = current.$ref;
    assert.ok(ref.startsWith('#/') && hops < 20, `unresolvable $ref ${ref}`);
    let target: unknown = doc;
    for (const part of ref.slice(2).split('/')) {
      const key = part.replaceAll('~1', '/').replaceAll('~0', '~');
      target = (target as Record<string, unknown> | undefined)?.[key];
    }
    assert.ok(target && typeof target === 'object', `dangling $ref ${ref}`);
    current = target as T;
  }
  return current;
}

function operationsOf(doc: OpenApiDocument): DocumentedOperation[] {
  const list: DocumentedOperation[] = [];
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    const shared = (item.parameters as Parameter[] | undefined) ?? [];
    for (const method of HTTP_METHODS) {
      const operation = item[method] as Operation | undefined;
      if (!operation) continue;
      const own = operation.parameters ?? [];
      list.push({
        method,
        path,
        label: `${method.toUpperCase()} ${path} (${operation.operationId ?? 'no operationId'})`,
        operation,
        parameters: [...shared, ...own].map((p) => deref(doc, p)),
        responses: Object.entries(operation.responses ?? {}).map(([status, response]) => [
          status,
          deref(doc, response),
        ]),
      });
    }
  }
  return list;
}

/** `{code, message, status}` required in the JSON body schema of an error response. */
function assertErrorSchema(doc: OpenApiDocument, label: string, response: Response): void {
  const json = response.content?.['application/json'];
  assert.ok(json?.schema, `${label}: no application/json schema`);
  const schema = deref(doc, json.schema);
  for (const field of ['code', 'message', 'status']) {
    assert.ok(schema.required?.includes(field), `${label}: \`${field}\` is not required`);
    assert.ok(schema.properties?.[field], `${label}: \`${field}\` is not described`);
  }
}

/**
 * The codes an error response names: its description is a list of "`code`: meaning" entries.
 * Text before the first entry would be a code written some other way, so there must be none.
 */
function codesNamedIn(description: string): string[] {
  const entries = [...description.matchAll(/`([a-z][a-z0-9_]*)`: /g)];
  assert.ok(entries.length > 0, `names no error code: "${description}"`);
  assert.equal(entries[0]?.index, 0, `does not start with a "\`code\`: " entry: "${description}"`);
  return entries.map((m) => m[1] as string);
}

/**
 * Every route the app serves, as "METHOD /path", read from Fastify's route tree: each line is a
 * segment appended to its parent's path, with the methods served there in parentheses.
 */
function servedRoutes(app: FastifyInstance): string[] {
  const routes: string[] = [];
  const prefixes: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^(.*?)[├└]── (\S+)(?: \(([A-Z, ]+)\))?/.exec(line);
    if (!match) continue;
    const depth = [...(match[1] as string)].length / 4;
    prefixes.length = depth;
    const path = (prefixes[depth - 1] ?? '') + match[2];
    prefixes.push(path);
    for (const method of match[3]?.split(', ') ?? []) routes.push(`${method} ${path}`);
  }
  return routes;
}

function isBearer(doc: OpenApiDocument, requirement: SecurityRequirement): boolean {
  return Object.keys(requirement).some((name) => {
    const scheme = doc.components?.securitySchemes?.[name];
    return scheme?.type === 'http' && scheme.scheme?.toLowerCase() === 'bearer';
  });
}

describe('OpenAPI document', () => {
  let t: TestApp;
  /** The document as served, untyped, for the validator. */
  let raw: Record<string, unknown>;
  let doc: OpenApiDocument;
  let operations: DocumentedOperation[];

  before(async () => {
    t = await startApp();
    const res = await t.app.inject({ method: 'GET', url: '/v1/openapi.json' });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    raw = res.json();
    doc = raw as unknown as OpenApiDocument;
    operations = operationsOf(doc);
  });
  after(() => t.close());

  it('validates against the OpenAPI 3.1 schema', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(raw));
    assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2));
    assert.equal(validator.version, '3.1');
  });

  it('is OpenAPI 3.1.x, document version 1.0.0', () => {
    assert.match(doc.openapi, /^3\.1\.\d+$/);
    assert.equal(doc.info.version, '1.0.0');
  });

  it('documents exactly the expected operations, each once', () => {
    const ids = operations.map((o) => o.operation.operationId);
    for (const o of operations) assert.ok(o.operation.operationId, `${o.label}: no operationId`);
    assert.equal(new Set(ids).size, ids.length, `duplicate operationIds: ${ids.join(', ')}`);
    assert.deepEqual([...ids].sort(), [...EXPECTED_OPERATIONS].sort());
  });

  it('documents every API route served, and serves every documented operation', () => {
    const served = servedRoutes(t.app).filter(
      (r) =>
        /^\S+ \/(v1|messages)(\/|$)/.test(r) &&
        !r.startsWith('HEAD ') &&
        !UNDOCUMENTED_ROUTES.includes(r),
    );
    // Guards the route-tree reading itself: it must find the catalogue.
    assert.ok(served.includes('GET /v1/pets/:petId'), `routes read: ${served.join(', ')}`);
    // Quickstart messages have their own server entry and no /v1 prefix (seed).
    const documented = operations.map(
      (o) =>
        `${o.method.toUpperCase()} ${o.path.startsWith('/messages') ? '' : '/v1'}${o.path.replace(/\{(\w+)\}/g, ':$1')}`,
    );
    assert.deepEqual([...served].sort(), [...documented].sort());
    for (const route of documented) {
      const [method, url] = route.split(' ') as [HTTPMethods, string];
      assert.ok(t.app.hasRoute({ method, url }), `${route} is documented but not served`);
    }
  });

  it('gives every operation tags declared by the document', () => {
    const declared = new Set((doc.tags ?? []).map((tag) => tag.name));
    for (const { label, operation } of operations) {
      assert.ok(operation.tags && operation.tags.length > 0, `${label}: no tags`);
      for (const tag of operation.tags) assert.ok(declared.has(tag), `${label}: tag "${tag}"`);
    }
  });

  it('gives every operation a 2xx response and error responses with {code, message, status}', () => {
    for (const { label, responses } of operations) {
      assert.ok(
        responses.some(([status]) => /^2(\d\d|XX)$/.test(status)),
        `${label}: no 2xx response`,
      );
      const errors = responses.filter(([status]) => /^[45](\d\d|XX)$/.test(status));
      assert.ok(errors.length > 0, `${label}: no error response`);
      for (const [status, response] of errors) {
        assertErrorSchema(doc, `${label} ${status}`, response);
      }
    }
  });

  it('documents 401 on every operation that needs credentials', () => {
    let bearer = 0;
    for (const { label, operation, responses } of operations) {
      const security = operation.security ?? doc.security ?? [];
      // An empty requirement `{}` means "no credentials" is one of the accepted ways.
      const secured = security.length > 0 && security.every((r) => Object.keys(r).length > 0);
      const isPublic = PUBLIC_OPERATIONS.includes(operation.operationId ?? '');
      assert.equal(secured, !isPublic, `${label}: security ${JSON.stringify(security)}`);
      if (security.some((r) => isBearer(doc, r))) bearer++;
      if (secured) {
        assert.ok(
          responses.some(([status]) => status === '401'),
          `${label}: needs credentials, no 401`,
        );
      }
    }
    assert.ok(bearer > 0, 'no operation is secured by a bearer API key');
  });

  it('marks getPet deprecated', () => {
    const getPet = operations.find((o) => o.operation.operationId === 'getPet');
    assert.ok(getPet, 'getPet is not documented');
    assert.equal(getPet.operation.deprecated, true);
  });

  it('documents 404 on operations with a path id, 400 on operations with a body', () => {
    for (const { label, path, operation, parameters, responses } of operations) {
      const statuses = responses.map(([status]) => status);
      const inPath = parameters.filter((p) => p.in === 'path').map((p) => p.name);
      const templated = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      assert.deepEqual([...inPath].sort(), [...templated].sort(), `${label}: path parameters`);
      if (inPath.length > 0) assert.ok(statuses.includes('404'), `${label}: has a path id, no 404`);
      if (operation.requestBody !== undefined) {
        assert.ok(statuses.includes('400'), `${label}: has a body, no 400`);
      }
    }
  });

  it('names, in each error response, only codes of the error table with that status', () => {
    const table: Record<string, { status: number }> = ERRORS;
    for (const { label, responses } of operations) {
      for (const [status, response] of responses) {
        if (!/^[45]\d\d$/.test(status)) continue;
        const where = `${label} ${status}`;
        for (const code of codesNamedIn(response.description)) {
          const entry = Object.hasOwn(table, code) ? table[code] : undefined;
          assert.ok(entry, `${where}: \`${code}\` is not in ERRORS`);
          assert.equal(entry.status, Number(status), `${where}: \`${code}\` is ${entry.status}`);
        }
      }
    }
  });

  it('passes Spectral (spectral:oas and the OWASP ruleset) with no finding', {
    timeout: 180_000,
  }, async () => {
    const { exitCode, output } = await linting;
    assert.equal(exitCode, 0, `spectral lint failed:\n${output}`);
  });

  it('serves the explorer and its script from the service itself (no CDN)', async () => {
    const page = await t.app.inject({ method: 'GET', url: '/docs/try/' });
    assert.equal(page.statusCode, 200);
    assert.match(String(page.headers['content-type']), /^text\/html/);
    const sources = [...page.body.matchAll(/<script\b[^>]*\bsrc\s*=\s*["']?([^"'\s>]+)/gi)].map(
      (m) => m[1] as string,
    );
    assert.ok(sources.length > 0, 'the docs page loads no script');
    for (const src of sources) {
      assert.doesNotMatch(src, /^([a-z][a-z0-9+.-]*:|\/\/)/i, `script from elsewhere: ${src}`);
    }
    const script = sources
      .map((src) => new URL(src, 'http://service/docs/try/').pathname)
      .find((path) => /^\/docs\/try\/js\/scalar\.[0-9a-f]{16}\.js$/.test(path));
    assert.ok(script, `the page does not load its scalar.<hash>.js: ${sources.join(', ')}`);

    const answer = await t.app.inject({ method: 'GET', url: script });
    assert.equal(answer.statusCode, 200);
    assert.match(String(answer.headers['content-type']), /^(application|text)\/javascript/);
    assert.ok(answer.body.length > 0, 'empty script');
  });
});

describe('the docs page: the reference rendered from the document', () => {
  let t: TestApp;
  let page: string;
  let doc: {
    paths: Record<string, Record<string, { operationId?: string; summary?: string }>>;
    components: { schemas: Record<string, unknown> };
    webhooks: Record<string, unknown>;
  };
  before(async () => {
    t = await startApp();
    const res = await t.app.inject({ url: '/docs' });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/html/);
    page = res.body;
    doc = (await t.app.inject({ url: '/v1/openapi.json' })).json();
  });
  after(() => t.close());

  const ids = () => new Set([...page.matchAll(/\bid="([^"]+)"/g)].map((m) => m[1]));

  it('shows every operation at its address, with its summary and anchor', () => {
    const found = ids();
    let count = 0;
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        if (!op.operationId) continue;
        count++;
        assert.ok(found.has(`op/${op.operationId}`), op.operationId);
        const full = `${path.startsWith('/messages') ? '' : '/v1'}${path}`;
        const section = page.slice(page.indexOf(`id="op/${op.operationId}"`)).slice(0, 2000);
        assert.ok(section.includes(`>${method.toUpperCase()}</span> <code>${full}</code>`), full);
        assert.ok(section.includes(String(op.summary).replaceAll("'", '&#39;')), op.summary);
      }
    }
    assert.ok(count >= 30, `${count} operations`);
  });

  it('shows every schema and every event delivered, each with its anchor', () => {
    const found = ids();
    for (const name of Object.keys(doc.components.schemas)) {
      assert.ok(found.has(`schema/${name}`), name);
    }
    assert.ok(Object.keys(doc.webhooks).length >= 8);
    for (const type of Object.keys(doc.webhooks)) assert.ok(found.has(`webhook/${type}`), type);
    for (const header of ['webhook-id', 'webhook-signature', 'animal-store-signature']) {
      assert.ok(page.includes(`<code>${header}</code>`), header);
    }
  });

  it('leads every link on the page to a place on it, those named from elsewhere too', () => {
    const found = ids();
    const anchors = [...page.matchAll(/href="#([^"]+)"/g)].map((m) => m[1] as string);
    assert.ok(anchors.length > 100);
    for (const anchor of anchors) assert.ok(found.has(anchor), `#${anchor}`);
    // The Deprecation answers' Link, and the portal's link to the error table.
    for (const anchor of ['deprecations', 'description/errors', 'description/sdk']) {
      assert.ok(found.has(anchor), anchor);
    }
    for (const code of Object.keys(ERRORS)) assert.ok(page.includes(`<code>${code}</code>`), code);
  });

  it('runs no script, and names the explorer, the document and the collection', () => {
    assert.doesNotMatch(page, /<script/i);
    for (const href of ['/docs/try/', '/v1/openapi.json', '/v1/postman.json', '/portal']) {
      assert.ok(page.includes(`href="${href}"`), href);
    }
  });
});
