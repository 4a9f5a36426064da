import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.js';
import {
  as,
  createCategory,
  createPet,
  errorCode,
  newTenant,
  startApp,
  type TestApp,
} from './helpers.js';

const SUNSET = Date.UTC(2030, 11, 5);
const PRODUCTION = {
  APP_ENV: 'production',
  PUBLIC_BASE_URL: 'https://api.animal.example/v1',
  STAGING_BASE_URL: 'https://staging.animal.example/v1',
  MESSAGES_BASE_URL: 'https://messages.animal.example',
  SESSION_SECRET: 'a production session secret of 32+ chars',
};

describe('GET /v1/pets/{petId} deprecation and sunset', () => {
  let now = SUNSET - 60_000;
  let t: TestApp;
  before(async () => {
    t = await startApp({ clock: { now: () => new Date(now) } });
  });
  after(() => t.close());

  it('announces the deprecation with exact headers until the sunset, and counts the calls', async () => {
    const tenant = await newTenant(t.app);
    const category = await createCategory(t.app, tenant);
    const pet = await createPet(t.app, tenant, { categoryId: category.id });
    now = SUNSET - 1; // the last millisecond
    for (const [id, status] of [
      [pet.id, 200],
      [987654321, 404],
    ] as const) {
      const res = await as(t.app, tenant, { method: 'GET', url: `/v1/pets/${id}` });
      assert.equal(res.statusCode, status);
      assert.equal(res.headers.deprecation, '@1767225600');
      assert.equal(res.headers.sunset, 'Thu, 05 Dec 2030 00:00:00 GMT');
      assert.equal(
        res.headers.link,
        `<http://localhost/v1/pets?id=${id}>; rel="successor-version", ` +
          '<http://localhost/docs#deprecations>; rel="deprecation"; type="text/html"',
      );
    }
    const other = await as(t.app, tenant, { method: 'GET', url: '/v1/pets' });
    assert.equal(other.headers.deprecation, undefined);
    const account = await as(t.app, tenant, { method: 'GET', url: '/v1/account' });
    assert.equal(account.json().deprecatedCalls, 2);
  });

  it('answers 410 endpoint_removed from the sunset instant on, in the same running app', async () => {
    const tenant = await newTenant(t.app);
    const category = await createCategory(t.app, tenant);
    const pet = await createPet(t.app, tenant, { categoryId: category.id, status: 'sold' });
    now = SUNSET;
    for (const [url, successor] of [
      [`/v1/pets/${pet.id}`, `/v1/pets?id=${pet.id}`],
      ['/v1/pets/987654321', '/v1/pets?id=987654321'],
      ['/v1/pets/abc', '/v1/pets'],
    ]) {
      const res = await as(t.app, tenant, { method: 'GET', url });
      assert.equal(res.statusCode, 410, url);
      assert.equal(errorCode(res), 'endpoint_removed');
      assert.deepEqual(Object.keys(res.json()).sort(), ['code', 'message', 'status']);
      assert.match(res.json().message, /removed on 2030-12-05; use GET \/v1\/pets\?id=\{petId\}/);
      assert.equal(res.headers.link, `<http://localhost${successor}>; rel="successor-version"`);
      assert.equal(res.headers.deprecation, undefined);
    }
    // The successor reads the pet by id.
    const replacement = await as(t.app, tenant, { method: 'GET', url: `/v1/pets?id=${pet.id}` });
    assert.equal(replacement.statusCode, 200);
    assert.deepEqual(replacement.json(), [pet]);
    const unauthenticated = await t.app.inject({ method: 'GET', url: `/v1/pets/${pet.id}` });
    assert.equal(unauthenticated.statusCode, 401);
  });
});

describe('environments', () => {
  it('refuses to start outside development without its addresses or with demo data', () => {
    const cases: Array<[Record<string, string>, string]> = [
      [{ ...PRODUCTION, PUBLIC_BASE_URL: '' }, 'PUBLIC_BASE_URL'],
      [{ ...PRODUCTION, MESSAGES_BASE_URL: '' }, 'MESSAGES_BASE_URL'],
      [{ ...PRODUCTION, DEMO_ACCOUNT: 'true' }, 'DEMO_ACCOUNT'],
      [{ ...PRODUCTION, APP_ENV: 'staging', STAGING_BASE_URL: '' }, 'STAGING_BASE_URL'],
      [{ ...PRODUCTION, SESSION_SECRET: '' }, 'SESSION_SECRET'],
      [{ ...PRODUCTION, APP_ENV: 'staging', SESSION_SECRET: '' }, 'SESSION_SECRET'],
    ];
    for (const [env, variable] of cases) {
      assert.throws(
        () => loadConfig(env),
        (err: unknown) => err instanceof ConfigError && err.variable === variable,
        variable,
      );
    }
    assert.equal(loadConfig(PRODUCTION).demoAccount, false);
  });

  it('gives production keys as_live_, refuses test keys there, and builds links on PUBLIC_BASE_URL', async () => {
    const dev = await startApp();
    const prod = await startApp({ env: { ...PRODUCTION, DATABASE_URL: dev.databaseUrl } });
    try {
      const devTenant = await newTenant(dev.app);
      const prodTenant = await newTenant(prod.app);
      assert.match(prodTenant.key, /^as_live_[0-9A-Za-z]{40}$/);
      assert.match(devTenant.key, /^as_test_/);

      const refused = await as(prod.app, devTenant, { method: 'GET', url: '/v1/pets' });
      assert.equal(refused.statusCode, 401);
      assert.match(
        refused.json().message,
        /staging or development environment, and this server is production: use the key there/,
      );
      const back = await as(dev.app, prodTenant, { method: 'GET', url: '/v1/pets' });
      assert.equal(back.statusCode, 401);
      assert.match(back.json().message, /belongs to the production environment/);

      const category = await createCategory(prod.app, prodTenant);
      await createPet(prod.app, prodTenant, { categoryId: category.id });
      const created = await as(prod.app, prodTenant, {
        method: 'POST',
        url: '/v1/pets',
        payload: { name: 'Linked', categoryId: category.id },
      });
      assert.match(
        String(created.headers.location),
        /^https:\/\/api\.animal\.example\/v1\/pets\/\d+$/,
      );
      const page = await as(prod.app, prodTenant, { method: 'GET', url: '/v1/pets?limit=1' });
      assert.match(
        String(page.headers.link),
        /^<https:\/\/api\.animal\.example\/v1\/pets\?limit=1&cursor=/,
      );
      const message = await as(prod.app, prodTenant, {
        method: 'POST',
        url: '/messages',
        payload: { message: 'hi' },
      });
      assert.match(
        String(message.headers.location),
        /^https:\/\/messages\.animal\.example\/messages\/msg_/,
      );
      const pet = created.json();
      const old = await as(prod.app, prodTenant, { method: 'GET', url: `/v1/pets/${pet.id}` });
      assert.match(
        String(old.headers.link),
        /^<https:\/\/api\.animal\.example\/v1\/pets\?id=\d+>; rel="successor-version", <https:\/\/api\.animal\.example\/docs#deprecations>/,
      );
    } finally {
      await prod.close();
      await dev.close();
    }
  });

  it('describes both environments, the messages server and the version in the OpenAPI document', async () => {
    const prod = await startApp({ env: PRODUCTION });
    try {
      const doc = (await prod.app.inject({ url: '/v1/openapi.json' })).json();
      assert.equal(doc.info.version, '1.0.0');
      assert.deepEqual(doc.servers, [
        { url: 'https://api.animal.example/v1', description: 'Production', 'x-internal': false },
        {
          url: 'https://staging.animal.example/v1',
          description: 'Staging (as_test_ keys)',
          'x-internal': false,
        },
      ]);
      assert.deepEqual(doc.paths['/messages'].servers, [
        {
          url: 'https://messages.animal.example',
          description: 'Quickstart messages (production, or local in development)',
        },
      ]);
      const getPet = doc.paths['/pets/{petId}'].get;
      assert.equal(getPet.deprecated, true);
      assert.match(getPet.description, /5 December 2030/);
      // Its replacement for reading by id.
      assert.match(getPet.description, /`GET \/v1\/pets\?id=\{petId\}`/);
      assert.ok(getPet.responses['410']);
      for (const name of ['Deprecation', 'Sunset', 'Link']) {
        assert.ok(getPet.responses['200'].headers[name], `no ${name} header`);
      }
    } finally {
      await prod.close();
    }
  });
});
