/**
 * Restricted keys (docs/decisions/0014-key-scopes.md). The operations come from the served
 * OpenAPI document, so a route added later is covered without touching this file: each must
 * name one scope, a key with it passes the scope check, a key without it is refused with 403
 * and the RFC 6750 challenge, and a key made without scopes has full access.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Fastify, { type InjectOptions, type LightMyRequestResponse } from 'fastify';
import { SCOPES, type Scope } from '../src/domain/scopes.js';
import { behindBearerKeys } from '../src/http/auth.js';
import { bearerScope } from '../src/http/scopes.js';
import {
  as,
  basic,
  createCategory,
  createPet,
  errorCode,
  newTenant,
  startApp,
  type Tenant,
} from './helpers.js';

interface Operation {
  id: string;
  method: string;
  path: string;
  scope: string | undefined;
  hasBody: boolean;
}

const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch']);

const t = await startApp();
after(() => t.close());

const openapi = (await t.app.inject({ method: 'GET', url: '/v1/openapi.json' })).json() as {
  paths: Record<
    string,
    Record<string, { operationId: string; security?: Array<Record<string, string[]>> }> & {
      servers?: unknown;
    }
  >;
};

const bearerOps: Operation[] = Object.entries(openapi.paths).flatMap(([path, item]) =>
  Object.entries(item)
    .filter(([method]) => METHODS.has(method))
    .flatMap(([method, op]) => {
      const operation = op as {
        operationId: string;
        security?: Array<Record<string, string[]>>;
        requestBody?: unknown;
      };
      const bearer = operation.security?.find((requirement) => 'bearerAuth' in requirement);
      if (!bearer) return [];
      return [
        {
          id: operation.operationId,
          method: method.toUpperCase(),
          path: `${item.servers ? '' : '/v1'}${path}`.replace(/\{\w+\}/g, '1'),
          scope: bearer.bearerAuth?.length === 1 ? bearer.bearerAuth[0] : undefined,
          hasBody: operation.requestBody !== undefined,
        },
      ];
    }),
);

/** A key of `tenant`'s account holding `scopes` (null: full access), made with HTTP Basic. */
async function keyWith(tenant: Tenant, scopes: readonly string[] | null): Promise<Tenant> {
  const res = await t.app.inject({
    method: 'POST',
    url: '/v1/keys',
    headers: { authorization: basic(tenant.email, tenant.password) },
    payload: scopes === null ? { name: 'full' } : { name: 'restricted', scopes },
  });
  assert.equal(res.statusCode, 201, res.body);
  const { key, id } = res.json();
  return { ...tenant, key, keyId: id, headers: { authorization: `Bearer ${key}` } };
}

function call(tenant: Tenant, op: Operation): Promise<LightMyRequestResponse> {
  return as(t.app, tenant, {
    method: op.method as InjectOptions['method'],
    url: op.path,
    ...(op.hasBody && { payload: {} }),
  });
}

describe('restricted keys', () => {
  let tenant: Tenant;
  before(async () => {
    tenant = await newTenant(t.app);
  });

  it('finds every bearer operation naming exactly one known scope', () => {
    assert.ok(bearerOps.length >= 25, `only ${bearerOps.length} bearer operations found`);
    const unscoped = bearerOps.filter((op) => !SCOPES.includes(op.scope as Scope));
    assert.deepEqual(
      unscoped.map((op) => op.id),
      [],
      'a bearer operation without one known scope',
    );
    for (const op of bearerOps) {
      const write = op.scope?.endsWith(':write');
      assert.equal(write, op.method !== 'GET', `${op.id}: reads need :read, changes :write`);
    }
  });

  it('lets its scope through, refuses another with 403 and the challenge, and full access passes', async () => {
    const keys = new Map<string, Tenant>();
    for (const scope of SCOPES) keys.set(scope, await keyWith(tenant, [scope]));
    const full = await keyWith(tenant, null);
    for (const op of bearerOps) {
      const scope = op.scope as Scope;
      const resource = scope.split(':')[0];
      // A scope of another resource: pets for everything but pets, where it is orders.
      const other = resource === 'pets' ? 'orders:write' : 'pets:write';
      const allowed = await call(keys.get(scope) as Tenant, op);
      assert.notEqual(allowed.statusCode, 403, `${op.id} refused its own scope ${scope}`);
      const refused = await call(keys.get(other) as Tenant, op);
      assert.equal(refused.statusCode, 403, `${op.id} with ${other}: ${refused.body}`);
      assert.equal(errorCode(refused), 'insufficient_scope');
      assert.equal(
        refused.headers['www-authenticate'],
        `Bearer realm="animal-store", error="insufficient_scope", scope="${scope}"`,
      );
      const fully = await call(full, op);
      assert.notEqual(fully.statusCode, 403, `${op.id} refused a full-access key`);
    }
  });

  it('guards a HEAD as its GET: with its scope it passes, with another it is 403', async () => {
    const reader = await keyWith(tenant, ['pets:read']);
    const other = await keyWith(tenant, ['orders:read']);
    const head = { method: 'HEAD', url: '/v1/pets' } as const;
    assert.equal((await as(t.app, reader, head)).statusCode, 200);
    const refused = await as(t.app, other, head);
    assert.equal(refused.statusCode, 403);
    assert.equal(
      refused.headers['www-authenticate'],
      'Bearer realm="animal-store", error="insufficient_scope", scope="pets:read"',
    );
  });

  it('refuses to start with a route behind a bearer key that names no scope', async () => {
    const app = Fastify();
    await assert.rejects(async () => {
      await app.register(async (scope) => {
        behindBearerKeys(scope);
        scope.get('/scoped', { schema: { security: bearerScope('pets:read') } }, () => 'ok');
        scope.get('/unscoped', () => 'no');
      });
    }, /GET \/unscoped is behind a bearer key and names no scope/);
    await app.close().catch(() => undefined);
  });

  it('lets a write scope read its resource, never another', async () => {
    const writer = await keyWith(tenant, ['pets:write']);
    assert.equal((await as(t.app, writer, { method: 'GET', url: '/v1/pets' })).statusCode, 200);
    const events = await as(t.app, writer, { method: 'GET', url: '/v1/events' });
    assert.equal(events.statusCode, 403);
  });

  it('reads pets with pets:read, and refuses writes and orders, counted and changing nothing', async () => {
    const owner = await newTenant(t.app);
    const category = await createCategory(t.app, owner, 'Scoped');
    const pet = await createPet(t.app, owner, { categoryId: category.id, name: 'Kept' });
    const reader = await keyWith(owner, ['pets:read']);

    const list = await as(t.app, reader, { method: 'GET', url: '/v1/pets' });
    assert.equal(list.statusCode, 200);
    assert.deepEqual(
      list.json().map((p: { id: number }) => p.id),
      [pet.id],
    );
    const remaining = Number(list.headers['x-ratelimit-remaining']);

    const add = await as(t.app, reader, {
      method: 'POST',
      url: '/v1/pets',
      payload: { name: 'Sneaked', categoryId: category.id },
    });
    assert.equal(add.statusCode, 403);
    assert.equal(errorCode(add), 'insufficient_scope');
    assert.match(add.headers['www-authenticate'] as string, /scope="pets:write"/);
    // Counted like any call.
    assert.equal(Number(add.headers['x-ratelimit-remaining']), remaining - 1);

    const order = await as(t.app, reader, {
      method: 'POST',
      url: '/v1/store/orders',
      payload: { petId: pet.id },
    });
    assert.equal(order.statusCode, 403);
    assert.match(order.headers['www-authenticate'] as string, /scope="orders:write"/);
    const remove = await as(t.app, reader, { method: 'DELETE', url: `/v1/pets/${pet.id}` });
    assert.equal(remove.statusCode, 403);

    // Nothing was stored: the owner's full key sees the one pet, still available, no order.
    const after = await as(t.app, owner, { method: 'GET', url: '/v1/pets' });
    assert.deepEqual(
      after.json().map((p: { id: number; status: string }) => [p.id, p.status]),
      [[pet.id, 'available']],
    );
    const orders = await as(t.app, owner, { method: 'GET', url: '/v1/store/orders' });
    assert.deepEqual(orders.json(), []);
  });

  it('refuses an unknown scope with 400 listing the valid ones, and an empty list', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/keys',
      headers: { authorization: basic(tenant.email, tenant.password) },
      payload: { scopes: ['pets:delete'] },
    });
    assert.equal(res.statusCode, 400);
    assert.equal(errorCode(res), 'validation_failed');
    for (const scope of SCOPES) assert.ok(res.json().message.includes(scope), res.body);
    const empty = await t.app.inject({
      method: 'POST',
      url: '/v1/keys',
      headers: { authorization: basic(tenant.email, tenant.password) },
      payload: { scopes: [] },
    });
    assert.equal(empty.statusCode, 400);
  });

  it('shows each key its scopes when made and in the list', async () => {
    const made = await t.app.inject({
      method: 'POST',
      url: '/v1/keys',
      headers: { authorization: basic(tenant.email, tenant.password) },
      payload: { name: 'dashboard', scopes: ['orders:read', 'pets:read', 'pets:read'] },
    });
    assert.equal(made.statusCode, 201);
    // Each once, in the documented order.
    assert.deepEqual(made.json().scopes, ['pets:read', 'orders:read']);
    const list = await t.app.inject({
      method: 'GET',
      url: '/v1/keys',
      headers: { authorization: basic(tenant.email, tenant.password) },
    });
    const byId = new Map(
      list.json().map((k: { id: string; scopes: unknown }) => [k.id, k.scopes] as const),
    );
    assert.deepEqual(byId.get(made.json().id), ['pets:read', 'orders:read']);
    assert.equal(byId.get(tenant.keyId), null, 'a key made without scopes has full access');
  });

  it('names each operation’s scope in the document and on the docs page', () => {
    const createPetOp = openapi.paths['/pets']?.post as unknown as {
      security: unknown;
      description: string;
    };
    assert.deepEqual(createPetOp.security, [{ bearerAuth: ['pets:write'] }]);
    assert.match(createPetOp.description, /Scope: `pets:write`/);
    // Every scope a key can be made with is one some operation needs: none is there for show.
    assert.deepEqual(new Set(bearerOps.map((op) => op.scope)), new Set(SCOPES));
  });

  it('refuses a write of a resource that is only read, and reads one stored as its read', async () => {
    const auth = { authorization: basic(tenant.email, tenant.password) };
    for (const scope of ['events:write', 'requests:write', 'account:write']) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/v1/keys',
        headers: auth,
        payload: { scopes: [scope] },
      });
      assert.equal(res.statusCode, 400, scope);
      assert.equal(errorCode(res), 'validation_failed');
      assert.match(res.json().message, /events:read/);
    }
    // A key made before these were refused holds `events:write`: it reads events, as it did.
    const made = await t.app.inject({
      method: 'POST',
      url: '/v1/keys',
      headers: auth,
      payload: { scopes: ['events:read'] },
    });
    await t.app.ctx.database.write((tx) =>
      tx
        .updateTable('api_keys')
        .set({ scopes: '["events:write","requests:write"]' })
        .where('id', '=', made.json().id)
        .execute(),
    );
    const old = { authorization: `Bearer ${made.json().key}` };
    const events = await t.app.inject({ method: 'GET', url: '/v1/events', headers: old });
    assert.equal(events.statusCode, 200, events.body);
    const requests = await t.app.inject({ method: 'GET', url: '/v1/requests', headers: old });
    assert.equal(requests.statusCode, 200, requests.body);
    const pets = await t.app.inject({ method: 'GET', url: '/v1/pets', headers: old });
    assert.equal(pets.statusCode, 403);
    const listed = await t.app.inject({ method: 'GET', url: '/v1/keys', headers: auth });
    const key = listed.json().find((k: { id: string }) => k.id === made.json().id);
    assert.deepEqual(key.scopes, ['events:read', 'requests:read']);
  });
});
