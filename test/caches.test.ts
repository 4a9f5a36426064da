import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Agent, get as httpGet } from 'node:http';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance, FastifyRequest, HTTPMethods, RouteOptions } from 'fastify';
import { Redis } from 'ioredis';
import { createPet as storePet } from '../src/catalogue/pets.js';
import { systemClock } from '../src/clock.js';
import { nobodyToTell } from '../src/domain/accounts.js';
import {
  createApiKey,
  KeyAuthenticator,
  revokeKeyById,
  secretKey,
} from '../src/domain/api-keys.js';
import { encodeCursor } from '../src/domain/pagination.js';
import {
  announcerFor,
  localFreshness,
  SHARED_KEPT_MS,
  sharedFreshness,
} from '../src/http/freshness.js';
import { PageCache } from '../src/http/page-cache.js';
import { type Database, openDatabase } from '../src/store/database.js';
import {
  as,
  basic,
  createCategory,
  createPet,
  newTenant,
  planAccount,
  sqliteDatabaseUrl,
  startApp,
  storeWithAccount,
  type Tenant,
  type TestApp,
  until,
} from './helpers.js';

// The embedded mode keeps verified keys, select results and answered list pages while the
// database stands unchanged. These tests hold it to "never staler than a read": every write
// shows on the next request, and another process's commit (the CLI's) within 10 ms.

const ids = (res: { json(): unknown }) => (res.json() as Array<{ id: number }>).map((p) => p.id);

/** DELETE /v1/keys/{keyId}, signed in as the key's owner. */
const revokeThroughApi = (app: FastifyInstance, tenant: Tenant) =>
  app.inject({
    method: 'DELETE',
    url: `/v1/keys/${tenant.keyId}`,
    headers: { authorization: basic(tenant.email, tenant.password) },
  });

describe('caches: a write through the API shows on the next request', () => {
  let t: TestApp;
  let owner: Tenant;
  let categoryId: number;
  before(async () => {
    t = await startApp();
    owner = await newTenant(t.app);
    categoryId = (await createCategory(t.app, owner)).id;
  });
  after(() => t.close());

  it('lists a created pet, a changed status and a deleted pet at once', async () => {
    const list = (url: string) => as(t.app, owner, { url });
    const first = await createPet(t.app, owner, { categoryId });
    assert.deepEqual(ids(await list('/v1/pets?limit=50')), [first.id]);
    assert.deepEqual(ids(await list('/v1/pets?status=sold&limit=50')), []);

    const second = await createPet(t.app, owner, { categoryId });
    assert.deepEqual(ids(await list('/v1/pets?limit=50')), [first.id, second.id]);

    const sold = await as(t.app, owner, {
      method: 'PATCH',
      url: `/v1/pets/${first.id}`,
      payload: { status: 'sold' },
    });
    assert.equal(sold.statusCode, 200);
    assert.deepEqual(ids(await list('/v1/pets?status=sold&limit=50')), [first.id]);

    const gone = await as(t.app, owner, { method: 'DELETE', url: `/v1/pets/${second.id}` });
    assert.equal(gone.statusCode, 204);
    assert.deepEqual(ids(await list('/v1/pets?limit=50')), [first.id]);
  });

  it('keeps full pages across an append and shows the appended pet on the last page', async () => {
    const tenant = await newTenant(t.app);
    const category = (await createCategory(t.app, tenant)).id;
    const made = [];
    for (let i = 0; i < 3; i++)
      made.push((await createPet(t.app, tenant, { categoryId: category })).id);
    const list = (url: string) => as(t.app, tenant, { url });
    const firstPage = await list('/v1/pets?limit=2');
    const next = /<[^>]*\/v1(\/pets\?[^>]*)>/.exec(String(firstPage.headers.link))?.[1];
    assert.ok(next, 'a full first page links the next');
    assert.deepEqual(ids(await list(`/v1${next}`)), [made[2]]);

    const { cache } = t.app.ctx.pages;
    const added = await createPet(t.app, tenant, { categoryId: category });
    const hits = cache.hits;
    const again = await list('/v1/pets?limit=2');
    // Ids are numbered per account in commit order, on both stores: the append lands after.
    const kept = 1;
    assert.equal(cache.hits, hits + kept, 'the full page is answered as kept');
    assert.equal(again.body, firstPage.body);
    assert.deepEqual(ids(await list(`/v1${next}`)), [made[2], added.id], 'the last page shows it');
    assert.equal(cache.hits, hits + kept, 'the last page was read again');

    // Any other write reads every page of the account again.
    const renamed = await as(t.app, tenant, {
      method: 'PATCH',
      url: `/v1/pets/${made[0]}`,
      payload: { name: 'Renamed' },
    });
    assert.equal(renamed.statusCode, 200);
    const changed = await list('/v1/pets?limit=2');
    assert.equal(cache.hits, hits + kept);
    assert.equal((changed.json() as Array<{ name: string }>)[0]?.name, 'Renamed');
  });

  it('gives each account its own page for the same URL', async () => {
    const other = await newTenant(t.app);
    const otherCategory = (await createCategory(t.app, other)).id;
    const mine = await createPet(t.app, owner, { categoryId, name: 'Mine' });
    const theirs = await createPet(t.app, other, { categoryId: otherCategory, name: 'Theirs' });
    const url = '/v1/pets?limit=100';
    // Ids are numbered per account: the names tell whose a pet is.
    const names = async (tenant: typeof owner) =>
      ((await as(t.app, tenant, { url })).json() as Array<{ name: string }>).map((p) => p.name);
    assert.ok((await names(owner)).includes(mine.name));
    assert.deepEqual(await names(other), [theirs.name]);
    assert.ok(!(await names(owner)).includes(theirs.name));
  });

  it('builds each page link on the address the request came in on (development)', async () => {
    for (let i = 0; i < 3; i++) await createPet(t.app, owner, { categoryId });
    const url = '/v1/pets?limit=1';
    for (const host of ['a.example', 'b.example:8080', 'a.example']) {
      const res = await as(t.app, owner, { url, headers: { host } });
      assert.match(String(res.headers.link), new RegExp(`^<http://${host}/v1/pets\\?limit=1&`));
    }
  });

  it('refuses a key revoked through the API from the next request', async () => {
    const tenant = await newTenant(t.app);
    assert.equal((await as(t.app, tenant, { url: '/v1/pets' })).statusCode, 200);
    assert.equal((await revokeThroughApi(t.app, tenant)).statusCode, 204);
    assert.equal((await as(t.app, tenant, { url: '/v1/pets' })).statusCode, 401);
  });
});

describe('caches: one keep-alive connection', () => {
  let t: TestApp;
  let agent: Agent;
  let base: string;
  before(async () => {
    t = await startApp();
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    // One socket for every request: what the connection remembers is what is tested.
    agent = new Agent({ keepAlive: true, maxSockets: 1 });
  });
  after(async () => {
    agent.destroy();
    await t.close();
  });

  function get(path: string, authorization: string) {
    return new Promise<{ status: number; body: string; socket: unknown }>((resolve, reject) => {
      const request = httpGet(`${base}${path}`, { agent, headers: { authorization } }, (res) => {
        let body = '';
        res.on('data', (chunk) => {
          body += String(chunk);
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, socket: res.socket }));
      });
      request.on('error', reject);
    });
  }

  it('answers each request as the key it names, and refuses a revoked one at once', async () => {
    const alice = await newTenant(t.app);
    const bob = await newTenant(t.app);
    // Ids are numbered per account (both pets are 1): names tell whose a page is.
    const alicePet = await createPet(t.app, alice, {
      name: 'Alice',
      categoryId: (await createCategory(t.app, alice)).id,
    });
    const bobPet = await createPet(t.app, bob, {
      name: 'Bob',
      categoryId: (await createCategory(t.app, bob)).id,
    });
    const idsOf = (body: string) =>
      (JSON.parse(body) as Array<{ name: string }>).map((p) => p.name);

    const first = await get('/v1/pets', alice.headers.authorization);
    assert.deepEqual(idsOf(first.body), [alicePet.name]);
    const again = await get('/v1/pets', alice.headers.authorization);
    assert.equal(again.socket, first.socket, 'the same connection');
    assert.deepEqual(idsOf(again.body), [alicePet.name]);
    // Another key on the same connection is another caller.
    assert.deepEqual(idsOf((await get('/v1/pets', bob.headers.authorization)).body), [bobPet.name]);
    // Both keys are remembered by the connection: neither is looked up in the key cache again.
    const keyCache = t.app.ctx.keys.caches.find((c) => c.name === 'keys');
    const lookups = (keyCache?.hits ?? 0) + (keyCache?.misses ?? 0);
    assert.deepEqual(idsOf((await get('/v1/pets', alice.headers.authorization)).body), [
      alicePet.name,
    ]);
    assert.deepEqual(idsOf((await get('/v1/pets', bob.headers.authorization)).body), [bobPet.name]);
    assert.equal((keyCache?.hits ?? 0) + (keyCache?.misses ?? 0), lookups, 'remembered');
    assert.equal((await get('/v1/pets', `${alice.headers.authorization}x`)).status, 401);

    // Revoked through another connection: this one is refused on its very next request.
    assert.equal((await revokeThroughApi(t.app, alice)).statusCode, 204);
    const refused = await get('/v1/pets', alice.headers.authorization);
    assert.equal(refused.socket, first.socket, 'still the same connection');
    assert.equal(refused.status, 401);
  });
});

describe('caches: another process writing the same SQLite file', () => {
  const file = sqliteDatabaseUrl();
  let t: TestApp;
  let cli: Database;
  let owner: Tenant;
  let categoryId: number;
  before(async () => {
    // SQLite whatever the run's database: the caches exist only there.
    t = await startApp({ env: { DATABASE_URL: file.url } });
    // A connection of its own, as the CLI would open.
    cli = openDatabase(file.url);
    owner = await newTenant(t.app);
    categoryId = (await createCategory(t.app, owner)).id;
  });
  after(async () => {
    await cli.close();
    await t.close();
    file.cleanup();
  });

  it('sees a key revoked by the CLI within 10 ms', async () => {
    const tenant = await newTenant(t.app);
    assert.equal((await as(t.app, tenant, { url: '/v1/pets' })).statusCode, 200);
    assert.equal((await as(t.app, tenant, { url: '/v1/pets' })).statusCode, 200);
    // SQLite: the instance sees the commit itself; there is nobody else to tell.
    const revoked = await revokeKeyById(cli, systemClock, tenant.keyId, nobodyToTell);
    assert.ok(revoked.ok);
    // Seen once the instance's next check of the file notes the other process's commit.
    await until(
      async () => (await as(t.app, tenant, { url: '/v1/pets' })).statusCode === 401,
      'the key refused',
    );
  });

  it('lists a pet another process added within 10 ms', async () => {
    const url = '/v1/pets?limit=100';
    const before = ids(await as(t.app, owner, { url }));
    assert.deepEqual(ids(await as(t.app, owner, { url })), before);
    const added = await cli.write(
      (tx) => storePet(tx, systemClock, owner.accountId, { name: 'Cli', categoryId }),
      { numbersFor: owner.accountId },
    );
    assert.ok(added.ok);
    const listed = [...before, added.value.id];
    await until(
      async () => ids(await as(t.app, owner, { url })).join() === listed.join(),
      'the pet listed',
    );
  });
});

describe('caches: the page cache itself', () => {
  const page = (text: string, link?: string) => ({ body: Buffer.from(text), link });
  const at = (whole: number | string, fullPages: number | string = whole) => ({ whole, fullPages });

  it('answers a page only under the version it was read under', () => {
    const pages = new PageCache();
    pages.keep('a', at(1), page('[1]'));
    assert.equal(pages.get('a', at(1))?.body.toString(), '[1]', 'kept');
    assert.equal(pages.get('b', at(1)), undefined, 'by key');
    assert.equal(pages.get('a', at(2)), undefined, 'another version is another state of the data');
    pages.keep('a', at(2), page('[2]'));
    assert.equal(pages.get('a', at(2))?.body.toString(), '[2]');
    assert.equal(pages.get('a', at(1)), undefined, 'replaced');
    assert.equal(pages.get('a', at('2')), undefined, 'versions compare exactly');
  });

  it("keeps a full page under the full pages' version, the last page under the whole", () => {
    const pages = new PageCache();
    pages.keep('full', at(1, 1), page('[1,2]', '<next>'));
    pages.keep('last', at(1, 1), page('[3]'));
    // An append: the whole moves on, full pages stand.
    assert.ok(pages.get('full', at(2, 1)));
    assert.equal(pages.get('last', at(2, 1)), undefined);
    // Any other change moves both.
    assert.equal(pages.get('full', at(3, 3)), undefined);
  });

  it('stays within its bounds, letting the oldest pages go first', () => {
    const pages = new PageCache();
    for (let i = 0; i < 5_000; i++) pages.keep(`k${i}`, at(1), page('x'.repeat(1_000)));
    let kept = 0;
    for (let i = 0; i < 5_000; i++) if (pages.get(`k${i}`, at(1))) kept++;
    assert.ok(kept > 0 && kept <= 2_000, `${kept} pages kept`);
    assert.ok(pages.get('k4999', at(1)), 'the newest page is kept');
    assert.equal(pages.get('k0', at(1)), undefined, 'the oldest went');
    assert.equal(pages.cache.evictions, 5_000 - kept);
  });

  it('keeps (embedded) only what was read while no write to its account landed', () => {
    let elsewhere = 0;
    const freshness = localFreshness(() => elsewhere);
    const request = {} as FastifyRequest;
    const last = page('[1]');
    const a = freshness.dataVersions(request, 'acct_a');
    const b = freshness.dataVersions(request, 'acct_b');
    assert.ok(a !== undefined && b !== undefined);
    assert.ok(freshness.keeps(request, 'acct_a', a, last));
    freshness.wrote(request, 'acct_a', 'changes'); // a write to A lands while A's page is read
    assert.ok(!freshness.keeps(request, 'acct_a', a, last));
    assert.ok(freshness.keeps(request, 'acct_b', b, last), "B's pages stand");
    const afterWrite = freshness.dataVersions(request, 'acct_a');
    assert.ok(afterWrite);
    elsewhere = 1; // another process commits: what it touched is not known
    assert.ok(!freshness.keeps(request, 'acct_a', afterWrite, last));
    assert.ok(!freshness.keeps(request, 'acct_b', b, last));
    // No version is ever given twice, whatever happened in between.
    const seen = new Set([a.whole, afterWrite.whole]);
    const now = freshness.dataVersions(request, 'acct_a');
    assert.ok(now && !seen.has(now.whole));
  });

  it('lets an append (embedded) move on only the last pages of its account', () => {
    let elsewhere = 0;
    const freshness = localFreshness(() => elsewhere);
    const request = {} as FastifyRequest;
    const full = page('[1,2]', '<next>');
    const last = page('[3]');
    const before = freshness.dataVersions(request, 'acct_a');
    assert.ok(before);
    freshness.wrote(request, 'acct_a', 'appends');
    assert.ok(freshness.keeps(request, 'acct_a', before, full), 'a full page stands');
    assert.ok(!freshness.keeps(request, 'acct_a', before, last), 'the last page does not');
    freshness.wrote(request, 'acct_a', 'changes');
    assert.ok(!freshness.keeps(request, 'acct_a', before, full), 'any other change: no page');
    const afterChange = freshness.dataVersions(request, 'acct_a');
    assert.ok(afterChange);
    freshness.wrote(request, 'acct_a', 'appends');
    assert.ok(freshness.keeps(request, 'acct_a', afterChange, full));
    elsewhere = 1; // another process's commit could be anything
    assert.ok(!freshness.keeps(request, 'acct_a', afterChange, full));
  });
});

describe('caches: the key cache itself', () => {
  const file = sqliteDatabaseUrl();
  let database: Database;
  let secret: string;
  before(async () => {
    const store = await storeWithAccount(file.url);
    database = store.database;
    const created = await database.write((tx) =>
      createApiKey(tx, systemClock, 'development', store.accountId, secretKey('k')),
    );
    secret = created.secret;
  });
  after(async () => {
    await database.close();
    file.cleanup();
  });

  it('announces the writes a route declares, none of a read, and refuses a read that declares writes', () => {
    const freshness = localFreshness(() => 0);
    const route = (method: HTTPMethods | HTTPMethods[], writes?: 'changes') =>
      ({ method, url: '/v1/things', handler: () => {}, config: { writes } }) as RouteOptions;
    assert.equal(announcerFor(freshness, route('GET')), undefined, 'a read runs no hook for it');
    assert.equal(announcerFor(freshness, route('DELETE')), undefined, 'undeclared: none');
    assert.equal(typeof announcerFor(freshness, route('DELETE', 'changes')), 'function');
    assert.throws(() => announcerFor(freshness, route(['GET', 'POST'], 'changes')), /only writes/);
  });

  it('keeps a key (embedded) until a key or plan changes in this process', async () => {
    const freshness = localFreshness(() => 0);
    const keys = new KeyAuthenticator(database, systemClock, 'development', freshness);
    const read = await keys.authenticate(secret);
    assert.ok(read.ok);
    assert.equal(keys.authenticate(secret), read, 'answered as kept, without a read');
    await freshness.keysChanged('acct_any');
    const again = keys.authenticate(secret);
    assert.ok(again instanceof Promise, 'read again');
    const fresh = await again;
    assert.equal(keys.authenticate(secret), fresh, 'and kept under the new generation');
  });

  it('never lets a request change what it was given from the cache', async () => {
    const keys = new KeyAuthenticator(
      database,
      systemClock,
      'development',
      localFreshness(() => 0),
    );
    const read = await keys.authenticate(secret);
    assert.ok(read.ok);
    const kept = keys.authenticate(secret);
    assert.equal(kept, read, 'every request is given the same object');
    const mutable = read.value as unknown as {
      keyId: string;
      account: { plan: string; limits: { perMinute: number } };
    };
    assert.throws(() => {
      mutable.keyId = 'key_other';
    }, TypeError);
    assert.throws(() => {
      mutable.account.plan = 'enterprise';
    }, TypeError);
    assert.throws(() => {
      mutable.account.limits.perMinute = 1e9;
    }, TypeError);
    const pages = new PageCache();
    const page = { body: Buffer.from('[]'), link: undefined as string | undefined };
    pages.keep('a', { whole: 1, fullPages: 1 }, page);
    assert.throws(() => {
      page.link = '<elsewhere>';
    }, TypeError);
  });

  it('trusts a key kept in the shared mode for 30 s after it was read, no longer', async () => {
    let nowMs = 1_000;
    // Only the key rules are used here: nothing is announced or counted.
    const freshness = sharedFreshness({} as never, {} as never, {} as never, () => nowMs);
    const keys = new KeyAuthenticator(database, systemClock, 'development', freshness);
    const read = await keys.reverify(secret, '7');
    assert.ok(read.ok);
    nowMs += SHARED_KEPT_MS - 1;
    assert.ok(keys.stands(read.value));
    assert.equal(keys.authenticate(secret), read, 'answered as kept, without a read');
    nowMs += 1;
    assert.ok(!keys.stands(read.value));
    const again = keys.authenticate(secret);
    assert.ok(again instanceof Promise, 'read again');
    const fresh = await again;
    assert.ok(fresh.ok);
    assert.equal(fresh.value.kept.version, undefined, 'under no version: kept once confirmed');
    // After the count: confirmed only under the version the count found.
    const counted = { keys: '7', data: 'd', appends: 'a' };
    assert.ok(freshness.keyConfirmed(read.value.kept, counted).confirmed);
    assert.deepEqual(freshness.keyConfirmed(read.value.kept, { ...counted, keys: '8' }), {
      confirmed: false,
      version: '8',
    });
    assert.deepEqual(freshness.keyConfirmed(fresh.value.kept, counted), {
      confirmed: false,
      version: '7',
    });
    // Redis away and requests let through: a kept key is read again and not kept.
    assert.deepEqual(freshness.keyConfirmed(read.value.kept, undefined), {
      confirmed: false,
      version: undefined,
    });
    assert.ok(freshness.keyConfirmed(fresh.value.kept, undefined).confirmed, 'just read');
  });

  it('reads a page again after its maximum age (the shared mode: 30 s)', () => {
    let nowMs = 0;
    const pages = new PageCache(SHARED_KEPT_MS, () => nowMs);
    const version = { whole: 1, fullPages: 1 };
    pages.keep('a', version, { body: Buffer.from('[1]'), link: undefined });
    nowMs = SHARED_KEPT_MS - 1;
    assert.ok(pages.get('a', version));
    nowMs = SHARED_KEPT_MS;
    assert.equal(pages.get('a', version), undefined);
  });
});

// SQLite with Redis: one instance (SQLite is not shared between machines) whose counters live
// in Redis. Its caches go by the SQLite file, as embedded; nothing reads versions in Redis.
describe('caches: SQLite with Redis', { skip: !process.env.TEST_REDIS_URL }, () => {
  const file = sqliteDatabaseUrl();
  const prefix = `test-${randomUUID()}:`;
  let t: TestApp;
  before(async () => {
    t = await startApp({ env: { DATABASE_URL: file.url, REDIS_KEY_PREFIX: prefix } });
  });
  after(async () => {
    await t.close();
    file.cleanup();
  });

  it('sees every change at once, and keeps no versions in Redis', async () => {
    const tenant = await newTenant(t.app, { plan: 'free' });
    const categoryId = (await createCategory(t.app, tenant)).id;
    const url = '/v1/pets?limit=100';
    assert.deepEqual(ids(await as(t.app, tenant, { url })), []);
    const pet = await createPet(t.app, tenant, { categoryId });
    assert.deepEqual(ids(await as(t.app, tenant, { url })), [pet.id]);
    await planAccount(t.app, tenant.accountId, 'pro');
    assert.equal((await as(t.app, tenant, { url })).headers['x-ratelimit-limit'], '300');
    assert.equal((await revokeThroughApi(t.app, tenant)).statusCode, 204);
    assert.equal((await as(t.app, tenant, { url })).statusCode, 401);
    const redis = new Redis(process.env.TEST_REDIS_URL ?? '');
    try {
      assert.ok((await redis.keys(`${prefix}rl:{${tenant.accountId}}:*`)).length > 0, 'counted');
      assert.deepEqual(await redis.keys(`${prefix}*:version:*`), []);
    } finally {
      redis.disconnect();
    }
  });
});

// The shared mode: instances share PostgreSQL and Redis. What each keeps (verified keys, list
// pages) is checked against the account's versions in Redis, read in the script that counts
// each request; writes and key or plan changes move them on before they are answered.
const shared = process.env.TEST_DATABASE_URL && process.env.TEST_REDIS_URL;

describe('caches: two instances sharing PostgreSQL and Redis', { skip: !shared }, () => {
  let a: TestApp;
  let b: TestApp;
  const prefix = `test-${randomUUID()}:`;
  before(async () => {
    a = await startApp({ env: { REDIS_KEY_PREFIX: prefix, RATE_LIMIT_ON_STORE_ERROR: 'open' } });
    b = await startApp({
      env: {
        REDIS_KEY_PREFIX: prefix,
        DATABASE_URL: a.databaseUrl,
        RATE_LIMIT_ON_STORE_ERROR: 'open',
      },
    });
  });
  after(async () => {
    await b.close();
    await a.close();
  });

  it('keeps pages and keys between requests, each read again after a change anywhere', async () => {
    const owner = await newTenant(a.app);
    const categoryId = (await createCategory(a.app, owner)).id;
    const url = '/v1/pets?limit=100';
    const first = await createPet(a.app, owner, { categoryId });
    assert.deepEqual(ids(await as(b.app, owner, { url })), [first.id]);
    // Kept: a row written behind the service's back (no announcement) is not seen...
    const hidden = await b.database.write(
      (tx) => storePet(tx, systemClock, owner.accountId, { name: 'Unannounced', categoryId }),
      { numbersFor: owner.accountId },
    );
    assert.ok(hidden.ok);
    assert.deepEqual(ids(await as(b.app, owner, { url })), [first.id], 'the page is kept');
    // ...until any write through the API, on any instance, moves the version on.
    const second = await createPet(a.app, owner, { categoryId });
    assert.deepEqual(ids(await as(b.app, owner, { url })), [first.id, hidden.value.id, second.id]);
    const gone = await as(a.app, owner, { method: 'DELETE', url: `/v1/pets/${second.id}` });
    assert.equal(gone.statusCode, 204);
    assert.deepEqual(ids(await as(b.app, owner, { url })), [first.id, hidden.value.id]);
  });

  it('keeps full pages across an append on the other instance, not across a change', async () => {
    const owner = await newTenant(a.app);
    const categoryId = (await createCategory(a.app, owner)).id;
    for (const name of ['One', 'Two', 'Three']) await createPet(a.app, owner, { categoryId, name });
    const names = (res: { json: () => unknown }) =>
      (res.json() as Array<{ name: string }>).map((p) => p.name);
    const full = await as(b.app, owner, { url: '/v1/pets?limit=2' });
    assert.deepEqual(names(full), ['One', 'Two']);
    const lastUrl = `/v1/pets?limit=2&cursor=${encodeCursor(2)}`;
    assert.deepEqual(names(await as(b.app, owner, { url: lastUrl })), ['Three']);
    // Behind the service's back (no announcement): seen only where a page is read again.
    await b.database.write((tx) =>
      tx
        .updateTable('pets')
        .set({ name: 'Unannounced' })
        .where('account_id', '=', owner.accountId)
        .where('id', '=', 1)
        .execute(),
    );
    await createPet(a.app, owner, { categoryId, name: 'Four' });
    assert.equal((await as(b.app, owner, { url: '/v1/pets?limit=2' })).body, full.body, 'kept');
    assert.deepEqual(names(await as(b.app, owner, { url: lastUrl })), ['Three', 'Four']);
    const renamed = await as(a.app, owner, {
      method: 'PATCH',
      url: '/v1/pets/2',
      payload: { name: 'Renamed' },
    });
    assert.equal(renamed.statusCode, 200);
    assert.deepEqual(names(await as(b.app, owner, { url: '/v1/pets?limit=2' })), [
      'Unannounced',
      'Renamed',
    ]);
  });

  it('refuses a key revoked through the other instance from its next request', async () => {
    const tenant = await newTenant(a.app);
    assert.equal((await as(b.app, tenant, { url: '/v1/pets' })).statusCode, 200);
    assert.equal((await as(b.app, tenant, { url: '/v1/pets' })).statusCode, 200);
    assert.equal((await revokeThroughApi(a.app, tenant)).statusCode, 204);
    assert.equal((await as(b.app, tenant, { url: '/v1/pets' })).statusCode, 401);
  });

  it('applies a plan changed through the other instance from the next request', async () => {
    const tenant = await newTenant(a.app, { plan: 'free' });
    const before = await as(b.app, tenant, { url: '/v1/pets' });
    assert.equal(before.headers['x-ratelimit-limit'], '60');
    await planAccount(a.app, tenant.accountId, 'pro');
    const after = await as(b.app, tenant, { url: '/v1/pets' });
    assert.equal(after.headers['x-ratelimit-limit'], '300');
  });

  it('reads everything again when Redis has lost the versions (a restart)', async () => {
    const tenant = await newTenant(a.app);
    const categoryId = (await createCategory(a.app, tenant)).id;
    const url = '/v1/pets?limit=100';
    assert.deepEqual(ids(await as(b.app, tenant, { url })), []);
    const hidden = await b.database.write(
      (tx) => storePet(tx, systemClock, tenant.accountId, { name: 'Behind the back', categoryId }),
      { numbersFor: tenant.accountId },
    );
    assert.ok(hidden.ok);
    const redis = new Redis(process.env.TEST_REDIS_URL ?? '');
    try {
      const versions = await redis.keys(`${prefix}rl:{${tenant.accountId}}:version:*`);
      assert.equal(versions.length, 3, 'the keys, data and appends versions');
      await redis.del(...versions);
    } finally {
      redis.disconnect();
    }
    assert.deepEqual(ids(await as(b.app, tenant, { url })), [hidden.value.id]);
  });

  it('with Redis away (and limits open), confirms every key in the database', async () => {
    const c = await startApp({
      env: {
        REDIS_KEY_PREFIX: prefix,
        DATABASE_URL: a.databaseUrl,
        RATE_LIMIT_ON_STORE_ERROR: 'open',
      },
    });
    try {
      const tenant = await newTenant(a.app);
      assert.equal((await as(c.app, tenant, { url: '/v1/pets' })).statusCode, 200);
      await c.app.ctx.limiter.close(); // Redis unreachable from c from now on
      assert.equal((await as(c.app, tenant, { url: '/v1/pets' })).statusCode, 200);
      assert.equal((await revokeThroughApi(a.app, tenant)).statusCode, 204);
      assert.equal((await as(c.app, tenant, { url: '/v1/pets' })).statusCode, 401);
    } finally {
      await c.close();
    }
  });
});
