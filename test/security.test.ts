/**
 * The security set, written once and run over every protected operation. The operations come
 * from the generated OpenAPI document, so a route added later is covered without touching this
 * file: every operation whose `security` names `bearerAuth` gets the bearer checks, every one that
 * names `basicAuth` (key management) the HTTP Basic checks, and every one with a `{petId}` or
 * `{categoryId}` the tenancy checks.
 */
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import {
  as,
  basic,
  createCategory,
  createPet,
  errorCode,
  freshIp,
  newTenant,
  startApp,
  type Tenant,
} from './helpers.js';

interface OpenApiOperation {
  operationId?: string;
  security?: Array<Record<string, string[]>>;
  requestBody?: unknown;
  responses?: Record<string, unknown>;
}

interface OpenApiDocument {
  security?: Array<Record<string, string[]>>;
  paths: Record<string, Record<string, OpenApiOperation>>;
}

interface Operation {
  operationId: string;
  method: string;
  /** Full path (with `/v1` unless the path has a server of its own) and `{param}` placeholders. */
  path: string;
  hasBody: boolean;
  /** The documented 2xx status. */
  success: number | undefined;
}

const METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

function operationsSecuredBy(doc: OpenApiDocument, scheme: string): Operation[] {
  const found: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!METHODS.has(method)) continue;
      const security = op.security ?? doc.security ?? [];
      if (!security.some((requirement) => scheme in requirement)) continue;
      found.push({
        operationId: op.operationId ?? `${method} ${path}`,
        method: method.toUpperCase(),
        // Quickstart messages carry their own `servers` entry, without the /v1 prefix.
        path: `${(item as { servers?: unknown }).servers ? '' : '/v1'}${path}`,
        hasBody: op.requestBody !== undefined,
        success: Object.keys(op.responses ?? {})
          .map(Number)
          .find((status) => status >= 200 && status < 300),
      });
    }
  }
  return found;
}

interface Ids {
  petId: number;
  categoryId: number;
  keyId?: string;
  messageId?: string;
  orderId?: number;
  webhookId?: string;
  deliveryId?: string;
  requestId?: string;
}

function urlFor(op: Operation, ids: Ids): string {
  return op.path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = (ids as unknown as Record<string, string | number | undefined>)[name];
    return encodeURIComponent(String(value ?? 1));
  });
}

/** A body the operation would accept from its owner, so only the credentials can fail it. */
function bodyFor(op: Operation, ids: Ids): Record<string, unknown> {
  if (op.method === 'POST' && op.path === '/v1/pets') {
    return { name: 'Intruder', categoryId: ids.categoryId };
  }
  if (op.method === 'POST' && op.path === '/messages') return { message: 'Intruder' };
  if (op.method === 'POST' && op.path === '/v1/store/orders') return { petId: ids.petId };
  if (op.method === 'PATCH' && op.path === '/v1/store/orders/{orderId}') {
    return { status: 'approved' };
  }
  if (op.method === 'POST' && op.path === '/v1/webhooks') {
    return { url: 'http://127.0.0.1:9/hook', events: ['*'] };
  }
  if (op.method === 'PATCH' && op.path === '/v1/webhooks/{webhookId}') return { events: ['*'] };
  if (op.path === '/v1/webhooks/{webhookId}/recover') return { since: new Date().toISOString() };
  return { name: 'Intruder' };
}

function requestFor(op: Operation, ids: Ids, headers: Record<string, string>): InjectOptions {
  return {
    method: op.method as InjectOptions['method'],
    url: urlFor(op, ids),
    headers,
    ...(op.hasBody && { payload: bodyFor(op, ids) }),
  };
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
function wellFormedKey(prefix: 'as_test_' | 'as_live_'): string {
  let key = prefix;
  for (let i = 0; i < 40; i++) key += BASE62[randomInt(BASE62.length)];
  return key;
}

function assertUnauthorized(
  res: LightMyRequestResponse,
  codes: string | string[],
  challenge: 'Bearer' | 'Basic',
  label: string,
): string {
  assert.equal(res.statusCode, 401, `${label}: ${res.body}`);
  const code = errorCode(res);
  assert.ok([codes].flat().includes(code), `${label}: code ${code}, expected ${codes}`);
  const header = res.headers['www-authenticate'];
  assert.equal(typeof header, 'string', `${label}: no WWW-Authenticate header`);
  assert.match(String(header), new RegExp(`^${challenge}( |$)`), label);
  assert.match(String(res.headers['content-type']), /^application\/json/, label);
  return code;
}

const t = await startApp();
after(() => t.close());
const openapi = (await t.app.inject({ method: 'GET', url: '/v1/openapi.json' })).json();
const bearerOps = operationsSecuredBy(openapi as OpenApiDocument, 'bearerAuth');
const basicOps = operationsSecuredBy(openapi as OpenApiDocument, 'basicAuth');

let owner: Tenant;
/** Ids of the owner's objects that the credential checks aim at: a broken check would hit them. */
let ids: Ids;
let busyCategory: { id: number; name: string };
let messageId: string;
let orderId: number;
/** A request of the owner's, in its request log. */
let requestId: string;
let emptyCategory: { id: number; name: string };
let pet: { id: number; name: string; categoryId: number; status: string };

async function ownerState(): Promise<unknown> {
  const read = async (url: string) => {
    const res = await as(t.app, owner, { method: 'GET', url });
    assert.equal(res.statusCode, 200, `${url}: ${res.body}`);
    return res.json();
  };
  return {
    pets: await read('/v1/pets?limit=100'),
    categories: await read('/v1/categories?limit=100'),
    pet: await read(`/v1/pets/${pet.id}`),
    busy: await read(`/v1/categories/${busyCategory.id}`),
    empty: await read(`/v1/categories/${emptyCategory.id}`),
  };
}

/**
 * A webhook endpoint of the owner's with one delivery (a test event), disabled so the
 * dispatcher leaves the delivery alone (a retry of one being sent would answer 409); enabled
 * if not `disabled` (a recovery refuses a disabled one).
 */
async function freshWebhook(disabled = true): Promise<{ webhookId: string; deliveryId: string }> {
  const made = await as(t.app, owner, {
    method: 'POST',
    url: '/v1/webhooks',
    payload: { url: 'http://127.0.0.1:9/hook', events: ['*'] },
  });
  const webhookId = made.json().id as string;
  await as(t.app, owner, {
    method: 'PATCH',
    url: `/v1/webhooks/${webhookId}`,
    payload: { enabled: !disabled },
  });
  const test = await as(t.app, owner, { method: 'POST', url: `/v1/webhooks/${webhookId}/test` });
  return { webhookId, deliveryId: test.json().id as string };
}

/** Whose key an accepted call is made with: the owner's, but for a reset, which would empty
 * the owner's store, and so resets an account of its own. */
async function holderFor(op: Operation): Promise<Tenant> {
  return op.operationId === 'resetSandbox' ? newTenant(t.app) : owner;
}

/** An order of the owner's that has ended (cancelled, its pet removed), for a delete to remove. */
async function endedOrder(): Promise<number> {
  const kept = await createPet(t.app, owner, { name: 'Ordered', categoryId: busyCategory.id });
  const order = await as(t.app, owner, {
    method: 'POST',
    url: '/v1/store/orders',
    payload: { petId: kept.id },
  });
  const id = order.json().id as number;
  await as(t.app, owner, {
    method: 'PATCH',
    url: `/v1/store/orders/${id}`,
    payload: { status: 'cancelled' },
  });
  await as(t.app, owner, { method: 'DELETE', url: `/v1/pets/${kept.id}` });
  return id;
}

/** A message of the owner's that the worker has sent, for a delete to remove. */
async function settledMessage(): Promise<string> {
  const sent = await as(t.app, owner, {
    method: 'POST',
    url: '/messages',
    payload: { message: 'To remove' },
  });
  const id = sent.json().id as string;
  for (let tries = 0; tries < 200; tries++) {
    const read = await as(t.app, owner, { method: 'GET', url: `/messages/${id}` });
    if (read.json().status === 'sent') return id;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`message ${id} was not sent within 5 s`);
}

before(async () => {
  owner = await newTenant(t.app);
  busyCategory = await createCategory(t.app, owner, 'Owner dogs');
  emptyCategory = await createCategory(t.app, owner, 'Owner empty');
  pet = await createPet(t.app, owner, { name: 'Owner Rex', categoryId: busyCategory.id });
  const message = await as(t.app, owner, {
    method: 'POST',
    url: '/messages',
    payload: { message: 'Owner note' },
  });
  messageId = message.json().id;
  const ordered = await createPet(t.app, owner, {
    name: 'Owner Kiwi',
    categoryId: busyCategory.id,
  });
  const order = await as(t.app, owner, {
    method: 'POST',
    url: '/v1/store/orders',
    payload: { petId: ordered.id },
  });
  orderId = order.json().id;
  requestId = String(order.headers['x-request-id']);
  await t.app.requestLog.flush();
  ids = { petId: pet.id, categoryId: emptyCategory.id };
});

describe('the operation list comes from the OpenAPI document', () => {
  it('finds every known bearer-protected operation', () => {
    const found = bearerOps.map((op) => op.operationId);
    for (const known of [
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
      'getAccount',
    ]) {
      assert.ok(found.includes(known), `${known} is not bearer-protected in ${found.join(', ')}`);
    }
  });

  it('finds the key-management operations behind HTTP Basic, and nothing else unprotected', () => {
    const found = basicOps.map((op) => op.operationId);
    for (const known of ['createApiKey', 'listApiKeys', 'revokeApiKey']) {
      assert.ok(found.includes(known), `${known} is not Basic-protected in ${found.join(', ')}`);
    }
    // In the catalogue, account and key areas only sign-up may be open: a new operation there
    // without security is a hole.
    const open: string[] = [];
    const doc = openapi as OpenApiDocument;
    for (const [path, item] of Object.entries(doc.paths)) {
      if (!/^\/(pets|categories|store|account|accounts|keys|messages)(\/|$)/.test(path)) continue;
      for (const [method, op] of Object.entries(item)) {
        if (!METHODS.has(method)) continue;
        if ((op.security ?? doc.security ?? []).length === 0) {
          open.push(op.operationId ?? `${method} ${path}`);
        }
      }
    }
    assert.deepEqual(open, ['createAccount']);
  });

  it('each bearer route really is served at the documented method and path', async () => {
    // Guards the enumeration itself: a path mangled when prefixing would make every check below
    // pass vacuously on 404s.
    for (const op of bearerOps) {
      const res = await as(t.app, await holderFor(op), {
        method: op.method as InjectOptions['method'],
        url: urlFor(op, { petId: 987_654_321, categoryId: 987_654_321 }),
        ...(op.hasBody && { payload: {} }),
      });
      if (res.statusCode === 404) {
        assert.notEqual(errorCode(res), 'route_not_found', `${op.method} ${op.path}`);
      }
    }
  });
});

describe('bearer authentication, on every bearer-protected operation', () => {
  let stateBefore: unknown;
  before(async () => {
    stateBefore = await ownerState();
  });

  const cases: Array<{
    name: string;
    codes: string | string[];
    authorization: () => string | undefined;
    message?: RegExp[];
  }> = [
    {
      name: 'no Authorization header',
      codes: 'missing_credentials',
      authorization: () => undefined,
    },
    {
      name: '"Bearer" with nothing after it',
      codes: 'malformed_authorization',
      authorization: () => 'Bearer',
    },
    {
      name: '"Bearer " with only a space after it',
      codes: 'malformed_authorization',
      authorization: () => 'Bearer ',
    },
    {
      name: "HTTP Basic with the owner's real email and password",
      codes: 'malformed_authorization',
      authorization: () => basic(owner.email, owner.password),
    },
    {
      name: "the owner's real key without a scheme",
      codes: 'malformed_authorization',
      authorization: () => owner.key,
    },
    {
      name: "the owner's real key under another scheme (Token)",
      codes: 'malformed_authorization',
      authorization: () => `Token ${owner.key}`,
    },
    {
      name: 'two tokens after Bearer',
      codes: ['malformed_authorization', 'invalid_api_key'],
      authorization: () => `Bearer ${owner.key} ${owner.key}`,
    },
    {
      name: 'a token that is not shaped like a key',
      codes: 'invalid_api_key',
      authorization: () => 'Bearer not-a-key',
    },
    {
      name: 'an unknown well-formed key (as_test_ + 40 base62)',
      codes: 'invalid_api_key',
      authorization: () => `Bearer ${wellFormedKey('as_test_')}`,
    },
    {
      name: 'a production key (as_live_…) in development',
      codes: 'invalid_api_key',
      authorization: () => `Bearer ${wellFormedKey('as_live_')}`,
      message: [/production/i, /development/i],
    },
  ];

  for (const op of bearerOps) {
    describe(`${op.method} ${op.path} (${op.operationId})`, () => {
      for (const c of cases) {
        it(`refuses ${c.name}: 401 ${[c.codes].flat().join(' or ')}`, async () => {
          const authorization = c.authorization();
          const res = await t.app.inject({
            ...requestFor(op, ids, authorization === undefined ? {} : { authorization }),
            remoteAddress: freshIp(),
          });
          assertUnauthorized(res, c.codes, 'Bearer', c.name);
          const { message } = res.json();
          for (const pattern of c.message ?? []) assert.match(message, pattern);
          // Whatever was sent, the answer never repeats a secret.
          assert.ok(!res.body.includes(owner.key), 'the key is echoed back');
          assert.ok(!res.body.includes(owner.password), 'the password is echoed back');
        });
      }

      it('refuses a revoked key with 401 invalid_api_key from the very next request', async () => {
        const admin = { authorization: basic(owner.email, owner.password) };
        const created = await t.app.inject({
          method: 'POST',
          url: '/v1/keys',
          headers: admin,
          payload: { name: `revoke-${op.operationId}` },
        });
        assert.equal(created.statusCode, 201, created.body);
        const { id, key } = created.json();
        const bearer = { authorization: `Bearer ${key}` };
        const works = await t.app.inject({ method: 'GET', url: '/v1/account', headers: bearer });
        assert.equal(works.statusCode, 200, works.body);

        const revoked = await t.app.inject({
          method: 'DELETE',
          url: `/v1/keys/${id}`,
          headers: admin,
        });
        assert.equal(revoked.statusCode, 204, revoked.body);

        const res = await t.app.inject({
          ...requestFor(op, ids, bearer),
          remoteAddress: freshIp(),
        });
        assertUnauthorized(res, 'invalid_api_key', 'Bearer', 'revoked key');
      });

      it('accepts the scheme name in any case ("bearer", "BEARER", "BeArEr")', async () => {
        for (const scheme of ['bearer', 'BEARER', 'BeArEr']) {
          // Fresh objects, so a delete or an update here leaves the owner's fixtures alone.
          const category = await createCategory(t.app, owner, `Scheme ${scheme}`);
          const fresh = await createPet(t.app, owner, {
            name: 'Scheme pet',
            categoryId: busyCategory.id,
          });
          // Enabled for a recovery, which a disabled endpoint refuses.
          const hook: { webhookId?: string; deliveryId?: string } = op.path.includes('{webhookId}')
            ? await freshWebhook(op.operationId !== 'recoverWebhook')
            : {};
          // A delete of an order or a message removes one made for it, ended or settled.
          const ended = {
            orderId: op.operationId === 'deleteOrder' ? await endedOrder() : orderId,
            messageId: op.operationId === 'deleteMessage' ? await settledMessage() : messageId,
          };
          // A reset would empty the owner's store: it resets an account of its own.
          const key = op.operationId === 'resetSandbox' ? (await newTenant(t.app)).key : owner.key;
          const res = await t.app.inject(
            requestFor(
              op,
              { petId: fresh.id, categoryId: category.id, requestId, ...ended, ...hook },
              { authorization: `${scheme} ${key}` },
            ),
          );
          assert.notEqual(res.statusCode, 401, `${scheme}: ${res.body}`);
          if (op.success !== undefined) {
            assert.equal(res.statusCode, op.success, `${scheme}: ${res.body}`);
          }
          // Clean up, so the owner's state stays as it was: what the operation made, then ours.
          const location = res.headers.location;
          if (typeof location === 'string') {
            const path = new URL(location).pathname;
            // An order is ended, not deleted; that frees its pet for deletion below.
            await (path.startsWith('/v1/store/orders/')
              ? as(t.app, owner, { method: 'PATCH', url: path, payload: { status: 'cancelled' } })
              : as(t.app, owner, { method: 'DELETE', url: path }));
          }
          await as(t.app, owner, { method: 'DELETE', url: `/v1/pets/${fresh.id}` });
          await as(t.app, owner, { method: 'DELETE', url: `/v1/categories/${category.id}` });
          if (hook.webhookId) {
            await as(t.app, owner, { method: 'DELETE', url: `/v1/webhooks/${hook.webhookId}` });
          }
        }
      });
    });
  }

  it("the refused requests changed nothing of the owner's", async () => {
    assert.deepEqual(await ownerState(), stateBefore);
  });

  it("revoking one key leaves the account's other keys working", async () => {
    const res = await as(t.app, owner, { method: 'GET', url: '/v1/account' });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().id, owner.accountId);
  });
});

describe('tenancy: another account cannot see or touch the owner’s objects', () => {
  let intruder: Tenant;
  let stateBefore: unknown;
  /** Ids that exist in no account at all: made by the intruder, then deleted. */
  let ghost: Ids;

  before(async () => {
    intruder = await newTenant(t.app);
    const category = await createCategory(t.app, intruder, 'Ghost category');
    const ghostPet = await createPet(t.app, intruder, { categoryId: category.id });
    const category2 = await createCategory(t.app, intruder, 'Ghost category 2');
    for (const url of [
      `/v1/pets/${ghostPet.id}`,
      `/v1/categories/${category.id}`,
      `/v1/categories/${category2.id}`,
    ]) {
      const res = await as(t.app, intruder, { method: 'DELETE', url });
      assert.equal(res.statusCode, 204, res.body);
    }
    ghost = { petId: ghostPet.id, categoryId: category2.id };
    stateBefore = await ownerState();
  });

  const idOps = bearerOps.filter((op) => /\{(petId|categoryId)\}/.test(op.path));

  it('covers the id-taking operations', () => {
    const found = idOps.map((op) => op.operationId);
    for (const known of [
      'getPet',
      'updatePet',
      'deletePet',
      'getCategory',
      'updateCategory',
      'deleteCategory',
    ]) {
      assert.ok(found.includes(known), `${known} missing from ${found.join(', ')}`);
    }
  });

  for (const op of idOps) {
    it(`${op.method} ${op.path} (${op.operationId}): another account's id → 404 not_found, as if it never existed`, async () => {
      const targets: Array<[string, Ids]> = op.path.includes('{categoryId}')
        ? [
            // A category with pets must not answer 409 category_in_use: that would leak it.
            ['category with pets', { petId: pet.id, categoryId: busyCategory.id }],
            ['empty category', { petId: pet.id, categoryId: emptyCategory.id }],
          ]
        : [['pet', { petId: pet.id, categoryId: busyCategory.id }]];
      const never = await as(t.app, intruder, requestFor(op, ghost, {}));
      assert.equal(never.statusCode, 404, `ghost id: ${never.body}`);
      assert.equal(errorCode(never), 'not_found');
      const ghostId = String(op.path.includes('{petId}') ? ghost.petId : ghost.categoryId);

      for (const [label, target] of targets) {
        const res = await as(t.app, intruder, requestFor(op, target, {}));
        assert.equal(res.statusCode, 404, `${label}: ${res.body}`);
        assert.equal(errorCode(res), 'not_found', label);
        const targetId = String(op.path.includes('{petId}') ? target.petId : target.categoryId);
        // Same words as for an id that exists nowhere: the answer says nothing about the owner.
        const withoutId = (message: string, id: string) =>
          message.replace(new RegExp(`\\b${id}\\b`, 'g'), '<id>');
        assert.equal(
          withoutId(res.json().message, targetId),
          withoutId(never.json().message, ghostId),
          label,
        );
        assert.ok(!res.body.includes('Owner'), `${label} leaks the owner's data: ${res.body}`);
      }
      assert.deepEqual(await ownerState(), stateBefore, 'the owner’s objects changed');
    });
  }

  it("lists only the caller's own objects", async () => {
    for (const url of ['/v1/pets?limit=100', '/v1/categories?limit=100']) {
      const res = await as(t.app, intruder, { method: 'GET', url });
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(res.json(), [], url);
    }
    const account = await as(t.app, intruder, { method: 'GET', url: '/v1/account' });
    assert.equal(account.json().id, intruder.accountId);
    assert.equal(account.json().email, intruder.email);
  });

  it("cannot file a pet under the owner's category, on create or on update", async () => {
    const own = await createCategory(t.app, intruder, 'Intruder cats');
    const created = await as(t.app, intruder, {
      method: 'POST',
      url: '/v1/pets',
      payload: { name: 'Cuckoo', categoryId: emptyCategory.id },
    });
    assert.equal(created.statusCode, 400, created.body);
    assert.equal(errorCode(created), 'unknown_category');

    const mine = await createPet(t.app, intruder, { name: 'Mine', categoryId: own.id });
    const moved = await as(t.app, intruder, {
      method: 'PATCH',
      url: `/v1/pets/${mine.id}`,
      payload: { categoryId: emptyCategory.id },
    });
    assert.equal(moved.statusCode, 400, moved.body);
    assert.equal(errorCode(moved), 'unknown_category');
    const reread = await as(t.app, intruder, { method: 'GET', url: `/v1/pets/${mine.id}` });
    assert.deepEqual(reread.json(), mine);
    assert.deepEqual(await ownerState(), stateBefore);
  });
});

describe('key management (HTTP Basic), on every Basic-protected operation', () => {
  let spare: { id: string; key: string };
  let keysBefore: unknown;

  const listKeys = async (tenant: Tenant) => {
    const res = await t.app.inject({
      method: 'GET',
      url: '/v1/keys',
      headers: { authorization: basic(tenant.email, tenant.password) },
    });
    assert.equal(res.statusCode, 200, res.body);
    return res.json() as Array<{ id: string }>;
  };

  before(async () => {
    // The key the DELETE checks aim at: a broken check would revoke it.
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/keys',
      headers: { authorization: basic(owner.email, owner.password) },
      payload: { name: 'spare' },
    });
    assert.equal(res.statusCode, 201, res.body);
    spare = res.json();
    keysBefore = await listKeys(owner);
  });

  const keyIds = (): Ids => ({ petId: 1, categoryId: 1, keyId: spare.id });

  for (const op of basicOps) {
    describe(`${op.method} ${op.path} (${op.operationId})`, () => {
      it('no Authorization header → 401 missing_credentials with a Basic challenge', async () => {
        const res = await t.app.inject({
          ...requestFor(op, keyIds(), {}),
          remoteAddress: freshIp(),
        });
        assertUnauthorized(res, 'missing_credentials', 'Basic', 'no header');
      });

      it('wrong password and unknown email → the same 401 invalid_credentials', async () => {
        const wrong = await t.app.inject({
          ...requestFor(op, keyIds(), {
            authorization: basic(owner.email, `${owner.password}!`),
          }),
          remoteAddress: freshIp(),
        });
        assertUnauthorized(wrong, 'invalid_credentials', 'Basic', 'wrong password');
        const unknown = await t.app.inject({
          ...requestFor(op, keyIds(), {
            authorization: basic(`nobody-${randomInt(1e9)}@example.com`, owner.password),
          }),
          remoteAddress: freshIp(),
        });
        assertUnauthorized(unknown, 'invalid_credentials', 'Basic', 'unknown email');
        // No account enumeration: the two answers cannot be told apart.
        assert.deepEqual(unknown.json(), wrong.json());
        assert.equal(unknown.headers['www-authenticate'], wrong.headers['www-authenticate']);
      });

      it("the owner's own valid API key as Bearer → 401 malformed_authorization", async () => {
        const res = await t.app.inject({
          ...requestFor(op, keyIds(), { authorization: `Bearer ${owner.key}` }),
          remoteAddress: freshIp(),
        });
        assertUnauthorized(res, 'malformed_authorization', 'Basic', 'bearer on key routes');
      });

      it('a Basic header that does not decode to email:password → 401 malformed_authorization', async () => {
        for (const authorization of [
          'Basic',
          'Basic !!!',
          `Basic ${Buffer.from('no-colon-here').toString('base64')}`,
          `Basic ${Buffer.from(`:${owner.password}`).toString('base64')}`,
        ]) {
          const res = await t.app.inject({
            ...requestFor(op, keyIds(), { authorization }),
            remoteAddress: freshIp(),
          });
          assertUnauthorized(res, 'malformed_authorization', 'Basic', authorization);
        }
      });
    });
  }

  it('the refused requests created, listed or revoked nothing', async () => {
    assert.deepEqual(await listKeys(owner), keysBefore);
    const res = await t.app.inject({
      method: 'GET',
      url: '/v1/account',
      headers: { authorization: `Bearer ${spare.key}` },
    });
    assert.equal(res.statusCode, 200, 'the spare key was revoked by a refused request');
  });

  it('the scheme name is case-insensitive ("basic")', async () => {
    const header = basic(owner.email, owner.password).replace(/^Basic/, 'basic');
    const res = await t.app.inject({
      method: 'GET',
      url: '/v1/keys',
      headers: { authorization: header },
    });
    assert.equal(res.statusCode, 200, res.body);
  });

  it("another account's keyId → 404 not_found, and that key keeps working", async () => {
    const intruder = await newTenant(t.app);
    const res = await t.app.inject({
      method: 'DELETE',
      url: `/v1/keys/${encodeURIComponent(spare.id)}`,
      headers: { authorization: basic(intruder.email, intruder.password) },
    });
    assert.equal(res.statusCode, 404, res.body);
    assert.equal(errorCode(res), 'not_found');
    const still = await t.app.inject({
      method: 'GET',
      url: '/v1/account',
      headers: { authorization: `Bearer ${spare.key}` },
    });
    assert.equal(still.statusCode, 200, still.body);
    assert.ok((await listKeys(owner)).some((k) => k.id === spare.id));
    // And the intruder's list shows only the intruder's own key.
    assert.deepEqual(
      (await listKeys(intruder)).map((k) => k.id),
      [intruder.keyId],
    );
  });

  it('listing keys never shows a secret', async () => {
    const res = await t.app.inject({
      method: 'GET',
      url: '/v1/keys',
      headers: { authorization: basic(owner.email, owner.password) },
    });
    assert.equal(res.statusCode, 200);
    assert.ok(!res.body.includes(owner.key));
    assert.ok(!res.body.includes(spare.key));
    for (const key of res.json()) assert.equal(key.key, undefined);
  });

  it('a revoked key leaves the list and cannot be revoked twice', async () => {
    const admin = { authorization: basic(owner.email, owner.password) };
    const created = await t.app.inject({ method: 'POST', url: '/v1/keys', headers: admin });
    assert.equal(created.statusCode, 201, created.body);
    const { id } = created.json();
    const first = await t.app.inject({ method: 'DELETE', url: `/v1/keys/${id}`, headers: admin });
    assert.equal(first.statusCode, 204);
    assert.ok(!(await listKeys(owner)).some((k) => k.id === id));
    const second = await t.app.inject({ method: 'DELETE', url: `/v1/keys/${id}`, headers: admin });
    assert.equal(second.statusCode, 404, second.body);
    assert.equal(errorCode(second), 'not_found');
  });
});
