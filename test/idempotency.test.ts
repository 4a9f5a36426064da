import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import net from 'node:net';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import type { Clock } from '../src/clock.js';
import {
  as,
  basic,
  createCategory,
  errorCode,
  freshIp,
  newTenant,
  startApp,
  type Tenant,
  type TestApp,
} from './helpers.js';

/** A clock the test moves. */
function movableClock(): Clock & { advance(ms: number): void } {
  let offset = 0;
  return {
    now: () => new Date(Date.now() + offset),
    advance: (ms) => {
      offset += ms;
    },
  };
}

const DAY_MS = 24 * 60 * 60 * 1000;

function withKey(options: InjectOptions, key: string): InjectOptions {
  return { ...options, headers: { ...options.headers, 'idempotency-key': key } };
}

async function petCount(app: FastifyInstance, tenant: Tenant): Promise<number> {
  const res = await as(app, tenant, { method: 'GET', url: '/v1/pets?limit=100' });
  assert.equal(res.statusCode, 200);
  return res.json().length;
}

/** Another API key of the tenant's account: full access, or only `scopes`. */
async function anotherKey(
  app: FastifyInstance,
  tenant: Tenant,
  scopes?: string[],
): Promise<Tenant> {
  const res = await app.inject({
    method: 'POST',
    url: '/v1/keys',
    headers: { authorization: basic(tenant.email, tenant.password) },
    payload: { name: 'another', ...(scopes && { scopes }) },
  });
  assert.equal(res.statusCode, 201, res.body);
  const { key, id } = res.json() as { key: string; id: string };
  return { ...tenant, key, keyId: id, headers: { authorization: `Bearer ${key}` } };
}

/** What a client sees of an answer: what a replay must repeat exactly. */
function seen(res: LightMyRequestResponse) {
  return { status: res.statusCode, body: res.body, location: res.headers.location };
}

describe('Idempotency-Key', () => {
  const clock = movableClock();
  let t: TestApp;
  let owner: Tenant;
  let categoryId: number;
  before(async () => {
    t = await startApp({ clock });
    owner = await newTenant(t.app);
    categoryId = (await createCategory(t.app, owner)).id;
  });
  after(() => t.close());

  const newPet = (name = 'Rex'): InjectOptions => ({
    method: 'POST',
    url: '/v1/pets',
    payload: { name, categoryId },
  });

  it('answers a POST sent again with its key as the first time, without doing it twice', async () => {
    const before = await petCount(t.app, owner);
    const key = randomUUID();
    const first = await as(t.app, owner, withKey(newPet(), key));
    assert.equal(first.statusCode, 201);
    assert.equal(first.headers['idempotent-replayed'], undefined);
    const again = await as(t.app, owner, withKey(newPet(), key));
    assert.deepEqual(seen(again), seen(first));
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(await petCount(t.app, owner), before + 1);
    // Without a key, the same request makes another.
    assert.equal((await as(t.app, owner, newPet())).statusCode, 201);
    assert.equal(await petCount(t.app, owner), before + 2);
  });

  it('keeps no refusal: it changed nothing, so the key may be sent again', async () => {
    const key = randomUUID();
    const bad = { method: 'POST', url: '/v1/pets', payload: { name: 'Rex', categoryId: 999 } };
    for (let i = 0; i < 2; i++) {
      const res = await as(t.app, owner, withKey(bad as InjectOptions, key));
      assert.equal(errorCode(res), 'unknown_category');
      assert.equal(res.headers['idempotent-replayed'], undefined);
    }
    const fixed = await as(t.app, owner, withKey(newPet(), key));
    assert.equal(fixed.statusCode, 201);
    assert.equal(fixed.headers['idempotent-replayed'], undefined);
  });

  it('refuses the key with another request: another body, path or method is 422', async () => {
    const key = randomUUID();
    assert.equal((await as(t.app, owner, withKey(newPet('Rex'), key))).statusCode, 201);
    const before = await petCount(t.app, owner);
    for (const other of [
      newPet('Fido'),
      { method: 'POST', url: '/v1/categories', payload: { name: 'Cats' } } as InjectOptions,
    ]) {
      const res = await as(t.app, owner, withKey(other, key));
      assert.equal(res.statusCode, 422, res.body);
      assert.equal(errorCode(res), 'idempotency_key_mismatch');
      assert.equal(res.headers['idempotent-replayed'], undefined);
    }
    assert.equal(await petCount(t.app, owner), before, 'nothing was created');
  });

  it('refuses a malformed key with 400 and changes nothing', async () => {
    const before = await petCount(t.app, owner);
    for (const key of ['', 'x'.repeat(256), 'caf\u00e9', 'tab\there']) {
      const res = await as(t.app, owner, withKey(newPet(), key));
      assert.equal(res.statusCode, 400, `${JSON.stringify(key)}: ${res.body}`);
      assert.equal(errorCode(res), 'invalid_idempotency_key');
    }
    // 255 printable characters, spaces inside, is a key.
    const longest = `a ${'~'.repeat(253)}`;
    assert.equal((await as(t.app, owner, withKey(newPet(), longest))).statusCode, 201);
    assert.equal(await petCount(t.app, owner), before + 1);
  });

  it('answers 409 with Retry-After while the first request with the key still runs', async () => {
    const before = await petCount(t.app, owner);
    const key = randomUUID();
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => as(t.app, owner, withKey(newPet(), key))),
    );
    const fresh = answers.filter((r) => r.statusCode === 201 && !r.headers['idempotent-replayed']);
    assert.equal(fresh.length, 1, answers.map((r) => r.statusCode).join(' '));
    for (const res of answers) {
      if (res.statusCode === 409) {
        assert.equal(errorCode(res), 'idempotency_key_in_use');
        assert.equal(res.headers['retry-after'], '1');
      } else {
        assert.deepEqual(seen(res), seen(fresh[0]));
      }
    }
    assert.equal(await petCount(t.app, owner), before + 1);
  });

  it("scopes keys to the account: another account's same key is its own", async () => {
    const other = await newTenant(t.app);
    const otherCategory = (await createCategory(t.app, other)).id;
    const key = randomUUID();
    assert.equal((await as(t.app, owner, withKey(newPet(), key))).statusCode, 201);
    const theirs = await as(
      t.app,
      other,
      withKey(
        { method: 'POST', url: '/v1/pets', payload: { name: 'Rex', categoryId: otherCategory } },
        key,
      ),
    );
    assert.equal(theirs.statusCode, 201);
    assert.equal(theirs.headers['idempotent-replayed'], undefined);
  });

  describe('replays reach only the credential that sent them', () => {
    const hook = (path: string): InjectOptions => ({
      method: 'POST',
      url: '/v1/webhooks',
      payload: { url: `http://127.0.0.1:9/hooks/${path}`, events: ['*'] },
    });
    const endpointCount = async (tenant: Tenant) =>
      (await as(t.app, tenant, { url: '/v1/webhooks' })).json().length as number;
    const keyCount = async (tenant: Tenant) =>
      (
        await t.app.inject({
          url: '/v1/keys',
          headers: { authorization: basic(tenant.email, tenant.password) },
        })
      ).json().length as number;
    /** Refused as sent by another credential: nothing of the first answer, no retry asked. */
    const refusedAsAnother = (res: LightMyRequestResponse, what: string, secret: string) => {
      assert.equal(res.statusCode, 409, `${what}: ${res.body}`);
      assert.equal(errorCode(res), 'idempotency_key_in_use', what);
      assert.equal(res.headers['retry-after'], undefined, `${what}: no retry will change it`);
      assert.equal(res.headers['idempotent-replayed'], undefined, what);
      assert.ok(!res.body.includes(secret), `${what}: not the secret`);
    };

    it('replays a webhook creation and a secret rotation to their key alone: another key of the account gets 409, no secret, nothing done', async () => {
      const tenant = await newTenant(t.app);
      // Issue 51: a key that reads the request log sees the Idempotency-Key; another key of the
      // account, allowed to write webhooks, sends the request again with it.
      const writer = await anotherKey(t.app, tenant, ['webhooks:write']);
      const createKey = randomUUID();
      const create = withKey(hook('credential'), createKey);
      const created = await as(t.app, tenant, create);
      assert.equal(created.statusCode, 201, created.body);
      const { id, secret } = created.json() as { id: string; secret: string };
      assert.match(secret, /^whsec_/);
      const rotate = withKey(
        { method: 'POST', url: `/v1/webhooks/${id}/rotate-secret` },
        randomUUID(),
      );
      const rotated = await as(t.app, tenant, rotate);
      assert.equal(rotated.statusCode, 200, rotated.body);
      const rotatedSecret = rotated.json().secret as string;
      assert.match(rotatedSecret, /^whsec_/);
      const endpoint = () =>
        t.database.reader
          .selectFrom('webhook_endpoints')
          .selectAll()
          .where('id', '=', id)
          .executeTakeFirstOrThrow();
      const stored = await endpoint();

      for (const [name, request, first, shown] of [
        ['create', create, created, secret],
        ['rotate-secret', rotate, rotated, rotatedSecret],
      ] as const) {
        const again = await as(t.app, tenant, request);
        assert.deepEqual(seen(again), seen(first), name);
        assert.equal(again.headers['idempotent-replayed'], 'true', name);
        assert.equal(again.json().secret, shown, `${name}: the secret again, to its own key`);
        refusedAsAnother(await as(t.app, writer, request), name, shown);
      }
      // With another body: 409 still, not the 422 that would tell whether the body matched.
      refusedAsAnother(
        await as(t.app, writer, withKey(hook('other'), createKey)),
        'another body',
        secret,
      );
      // Nothing was done again: one endpoint, its secret rotated once.
      assert.equal(await endpointCount(tenant), 1);
      assert.deepEqual(await endpoint(), stored);
      // The first key still gets its answers; the other, with a key of its own, its own endpoint.
      assert.deepEqual(seen(await as(t.app, tenant, rotate)), seen(rotated));
      const own = await as(t.app, writer, withKey(hook('own'), randomUUID()));
      assert.equal(own.statusCode, 201, own.body);
      assert.notEqual(own.json().secret, secret);

      // At rest, the credential is a keyed hash, salted by the key: two answers of one API key
      // cannot be told to be of one key, and no key id is in the rows.
      const rows = await t.database.reader
        .selectFrom('idempotency_keys')
        .select('credential_hash')
        .where('scope', '=', tenant.accountId)
        .execute();
      const hashes = rows.map((row) => row.credential_hash);
      assert.equal(new Set(hashes).size, hashes.length);
      for (const hash of hashes) {
        assert.ok(hash && !hash.includes(tenant.keyId) && !hash.includes(writer.keyId));
      }
    });

    it('replays a new API key to the account password alone: an API key of the account never gets it', async () => {
      const tenant = await newTenant(t.app);
      const password = { authorization: basic(tenant.email, tenant.password) };
      const key = randomUUID();
      const newKey = withKey(
        { method: 'POST', url: '/v1/keys', headers: password, payload: { name: 'replayed' } },
        key,
      );
      const first = await t.app.inject(newKey);
      assert.equal(first.statusCode, 201, first.body);
      const secret = first.json().key as string;
      // The password is one credential, at every sign-in.
      const again = await t.app.inject(newKey);
      assert.deepEqual(seen(again), seen(first));
      assert.equal(again.headers['idempotent-replayed'], 'true');
      const keys = await keyCount(tenant);
      // A full-access API key with the same Idempotency-Key: /v1/keys takes no API key...
      const bearer = await as(
        t.app,
        tenant,
        withKey({ method: 'POST', url: '/v1/keys', payload: { name: 'replayed' } }, key),
      );
      assert.equal(bearer.statusCode, 401, bearer.body);
      assert.ok(!bearer.body.includes(secret));
      // ...and on an operation it may call, the key is the password's: 409, nothing made.
      refusedAsAnother(await as(t.app, tenant, withKey(hook('from-key'), key)), 'webhook', secret);
      assert.equal(await endpointCount(tenant), 0);
      // The other way round: a key's kept answer is not the password's either.
      const hookKey = randomUUID();
      const made = await as(t.app, tenant, withKey(hook('by-key'), hookKey));
      assert.equal(made.statusCode, 201, made.body);
      refusedAsAnother(
        await t.app.inject(withKey({ ...newKey, headers: password }, hookKey)),
        'keys',
        made.json().secret,
      );
      assert.equal(await keyCount(tenant), keys);
    });

    it('treats answers kept before credentials were (migration 0017): without a secret replayed as before, with one to no one', async () => {
      const tenant = await newTenant(t.app);
      const other = await anotherKey(t.app, tenant);
      const category = await createCategory(t.app, tenant);
      const pet = withKey(
        { method: 'POST', url: '/v1/pets', payload: { name: 'Old', categoryId: category.id } },
        randomUUID(),
      );
      const made = await as(t.app, tenant, pet);
      assert.equal(made.statusCode, 201, made.body);
      const newKey = withKey(
        {
          method: 'POST',
          url: '/v1/keys',
          headers: { authorization: basic(tenant.email, tenant.password) },
          payload: { name: 'old' },
        },
        randomUUID(),
      );
      const key = await t.app.inject(newKey);
      assert.equal(key.statusCode, 201, key.body);
      await t.database.write((tx) =>
        tx
          .updateTable('idempotency_keys')
          .set({ credential_hash: null })
          .where('scope', '=', tenant.accountId)
          .execute(),
      );
      const keys = await keyCount(tenant);
      // Nothing in it the account's tables do not hold: replayed, to any key of the account.
      const replayed = await as(t.app, other, pet);
      assert.deepEqual(seen(replayed), seen(made));
      assert.equal(replayed.headers['idempotent-replayed'], 'true');
      // A secret, from an unknown sender: to no one, not even the password; nothing made again.
      const refused = await t.app.inject(newKey);
      refusedAsAnother(refused, 'kept before', key.json().key);
      assert.match(refused.json().message, /before answers were tied/);
      assert.equal(await keyCount(tenant), keys);
    });
  });

  it('covers every POST: each answers the same twice and acts once', async () => {
    const tenant = await newTenant(t.app);
    const category = await createCategory(t.app, tenant, 'Birds');
    const pet = await as(t.app, tenant, {
      method: 'POST',
      url: '/v1/pets',
      payload: { name: 'Tweety', categoryId: category.id },
    });
    const email = `idem-${randomUUID()}@example.com`;
    const ip = freshIp();
    const posts: Array<{ name: string; request: InjectOptions; count: () => Promise<number> }> = [
      {
        name: 'sign-up',
        request: {
          method: 'POST',
          url: '/v1/accounts',
          payload: { email, password: 'correct horse battery staple' },
          remoteAddress: ip,
        },
        count: async () => 0,
      },
      {
        name: 'category',
        request: {
          method: 'POST',
          url: '/v1/categories',
          headers: tenant.headers,
          payload: { name: 'Fish' },
        },
        count: async () =>
          (await as(t.app, tenant, { url: '/v1/categories?limit=100' })).json().length,
      },
      {
        name: 'pet',
        request: {
          method: 'POST',
          url: '/v1/pets',
          headers: tenant.headers,
          payload: { name: 'Nemo', categoryId: category.id },
        },
        count: () => petCount(t.app, tenant),
      },
      {
        name: 'order',
        request: {
          method: 'POST',
          url: '/v1/store/orders',
          headers: tenant.headers,
          payload: { petId: pet.json().id },
        },
        count: async () =>
          (await as(t.app, tenant, { url: '/v1/store/orders?limit=100' })).json().length,
      },
      {
        name: 'message',
        request: {
          method: 'POST',
          url: '/messages',
          headers: tenant.headers,
          payload: { message: 'Hello, store!' },
        },
        count: async () => 0,
      },
      {
        name: 'key',
        request: {
          method: 'POST',
          url: '/v1/keys',
          headers: { authorization: basic(tenant.email, tenant.password) },
          payload: { name: 'ci' },
        },
        count: async () =>
          (
            await t.app.inject({
              url: '/v1/keys',
              headers: { authorization: basic(tenant.email, tenant.password) },
            })
          ).json().length,
      },
    ];
    for (const { name, request, count } of posts) {
      const key = randomUUID();
      const before = await count();
      const first = await t.app.inject(withKey(request, key));
      assert.ok([201, 202].includes(first.statusCode), `${name}: ${first.body}`);
      const again = await t.app.inject(withKey(request, key));
      assert.deepEqual(seen(again), seen(first), name);
      assert.equal(again.headers['idempotent-replayed'], 'true', name);
      if (name !== 'sign-up' && name !== 'message') {
        assert.equal(await count(), before + 1, `${name}: acted once`);
      }
    }
    // The sign-up's replay is its 201, where a second sign-up would be a 409.
    const signUp = posts[0].request;
    assert.equal((await t.app.inject(signUp)).statusCode, 409);
  });

  it('keeps the answer sealed: the stored row holds neither the body nor a secret', async () => {
    const key = randomUUID();
    const res = await t.app.inject(
      withKey(
        {
          method: 'POST',
          url: '/v1/keys',
          headers: { authorization: basic(owner.email, owner.password) },
          payload: { name: 'sealed' },
        },
        key,
      ),
    );
    assert.equal(res.statusCode, 201);
    const secret = res.json().key as string;
    const rows = await t.database.reader
      .selectFrom('idempotency_keys')
      .select(['key_hash', 'answer'])
      .where('scope', '=', owner.accountId)
      .execute();
    assert.ok(rows.length > 0);
    for (const row of rows) {
      assert.ok(!row.answer.includes(secret) && !row.answer.includes('sealed'));
      assert.notEqual(row.key_hash, key);
    }
  });

  it('keeps nothing a copy of the database could test a guess against: keys, bodies and answers are keyed by the server', async () => {
    // A portal user's sign-up, keyed with a one-character key: the body holds the password.
    const email = `at-rest-${randomUUID()}@example.com`;
    const password = 'correct horse battery staple';
    const ip = freshIp();
    const signUp = await t.app.inject({
      method: 'POST',
      url: '/v1/accounts',
      remoteAddress: ip,
      headers: { 'idempotency-key': '7' },
      payload: { email, password },
    });
    assert.equal(signUp.statusCode, 201);
    const row = await t.database.reader
      .selectFrom('idempotency_keys')
      .selectAll()
      .where('scope', '=', `ip:${ip}`)
      .executeTakeFirstOrThrow();
    // What the old scheme stored, and what an attacker would try: unsalted digests of the key,
    // of the request (its password inside), and the answer's key derived from client input.
    const body = JSON.stringify({ email, password });
    const guesses = ['7', `ip:${ip}\u00007`, `POST /v1/accounts\n${body}`].flatMap((text) => {
      const digest = createHash('sha256').update(text).digest();
      return [digest.toString('hex'), digest.toString('base64url')];
    });
    assert.ok(!guesses.includes(row.key_hash), 'the key is kept as a digest of itself');
    assert.ok(!guesses.includes(row.fingerprint), 'the request is kept as a digest of itself');
    assert.ok(!row.answer.includes(password));
  });

  it("replays only under the server's key: another key finds nothing; a rotation keeps finding it", async () => {
    const first = 'the first server key and long enough to be accepted';
    const second = 'the second server key and long enough to be accepted';
    const at = async (keys: string, run: (one: TestApp) => Promise<void>) => {
      const one = await startApp({
        clock,
        env: { DATABASE_URL: t.databaseUrl, WEBHOOK_SECRET_KEY: keys },
      });
      try {
        await run(one);
      } finally {
        await one.close();
      }
    };
    const key = randomUUID();
    let kept: ReturnType<typeof seen> | undefined;
    await at(first, async (one) => {
      const res = await as(one.app, owner, withKey(newPet('Keyed'), key));
      assert.equal(res.statusCode, 201);
      kept = seen(res);
    });
    // The server's key changed for good: the kept answer cannot be found (nor opened).
    await at(second, async (one) => {
      const res = await as(one.app, owner, withKey(newPet('Keyed'), randomUUID()));
      assert.equal(res.statusCode, 201);
      const rows = await one.database.reader
        .selectFrom('idempotency_keys')
        .select('key_hash')
        .where('scope', '=', owner.accountId)
        .execute();
      assert.ok(rows.length >= 2);
    });
    // Rotating (the new key first, the old one still listed): found, opened, not done twice.
    await at(`${second},${first}`, async (one) => {
      const before = await petCount(one.app, owner);
      const again = await as(one.app, owner, withKey(newPet('Keyed'), key));
      assert.deepEqual(seen(again), kept);
      assert.equal(again.headers['idempotent-replayed'], 'true');
      const other = await as(one.app, owner, withKey(newPet('Another'), key));
      assert.equal(errorCode(other), 'idempotency_key_mismatch');
      assert.equal(await petCount(one.app, owner), before);
    });
  });

  it('refuses a key sent twice (Node joins them as "a, b") with 400, and changes nothing', async () => {
    const before = await petCount(t.app, owner);
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = t.app.server.address() as { port: number };
    const body = JSON.stringify({ name: 'Twice', categoryId });
    // Written by hand: Node's client would join the two headers itself.
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1');
      let text = '';
      socket.on('data', (chunk) => {
        text += chunk;
      });
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
      // Not ended: the service closes the connection once it has answered (Connection: close).
      socket.write(
        [
          'POST /v1/pets HTTP/1.1',
          'Host: 127.0.0.1',
          `Authorization: Bearer ${owner.key}`,
          'Content-Type: application/json',
          `Content-Length: ${Buffer.byteLength(body)}`,
          'Idempotency-Key: a',
          'Idempotency-Key: b',
          'Connection: close',
          '',
          body,
        ].join('\r\n'),
      );
    });
    const res = {
      status: Number(raw.slice(9, 12)),
      body: raw.slice(raw.indexOf('\r\n\r\n') + 4),
    };
    assert.equal(res.status, 400, `${res.status} ${res.body}`);
    assert.equal(JSON.parse(res.body).code, 'invalid_idempotency_key');
    assert.equal(await petCount(t.app, owner), before);
  });

  it('seals only answers that carry a secret; both kinds replay the same', async () => {
    const petKey = randomUUID();
    const pet = await as(t.app, owner, withKey(newPet('Plain'), petKey));
    const apiKey = randomUUID();
    const newKey = withKey(
      {
        method: 'POST',
        url: '/v1/keys',
        headers: { authorization: basic(owner.email, owner.password) },
        payload: { name: 'sealed-only' },
      },
      apiKey,
    );
    const made = await t.app.inject(newKey);
    const rows = await t.database.reader
      .selectFrom('idempotency_keys')
      .select('answer')
      .where('scope', '=', owner.accountId)
      .orderBy('created_at', 'desc')
      .limit(2)
      .execute();
    const answers = rows.map((row) => row.answer);
    // The pet's answer is JSON (nothing in it the pets table does not hold); the key's is not.
    assert.ok(answers.some((answer) => answer.startsWith('{') && answer.includes('Plain')));
    const sealed = answers.find((answer) => !answer.startsWith('{'));
    assert.ok(sealed && !sealed.includes(made.json().key));
    assert.deepEqual(seen(await as(t.app, owner, withKey(newPet('Plain'), petKey))), seen(pet));
    assert.deepEqual(seen(await t.app.inject(newKey)), seen(made));
  });

  it('keeps an answer 24 hours, then sweeps it; the key may be used again after', async () => {
    const key = randomUUID();
    const before = await petCount(t.app, owner);
    assert.equal((await as(t.app, owner, withKey(newPet(), key))).statusCode, 201);
    clock.advance(DAY_MS - 60_000);
    const replayed = await as(t.app, owner, withKey(newPet(), key));
    assert.equal(replayed.headers['idempotent-replayed'], 'true');
    clock.advance(120_000);
    const deleted = await t.app.ctx.housekeeping.runOnce();
    assert.ok(deleted['idempotency keys'] >= 1, JSON.stringify(deleted));
    const fresh = await as(t.app, owner, withKey(newPet(), key));
    assert.equal(fresh.statusCode, 201);
    assert.equal(fresh.headers['idempotent-replayed'], undefined);
    assert.equal(await petCount(t.app, owner), before + 2);
  });

  it('works across instances: a key kept by one is replayed by another; at once, one change', async () => {
    // Another instance kept the answer: this one has no in-flight record of the key, and finds
    // the answer in the store. On PostgreSQL, sent to both at once, the second insert of the
    // key waits for the first commit and rolls its own change back.
    const key = randomUUID();
    const before = await petCount(t.app, owner);
    const elsewhere = await startApp({ clock, env: { DATABASE_URL: t.databaseUrl } });
    try {
      const first = await as(elsewhere.app, owner, withKey(newPet(), key));
      assert.equal(first.statusCode, 201);
      const here = await as(t.app, owner, withKey(newPet(), key));
      assert.deepEqual(seen(here), seen(first));
      assert.equal(here.headers['idempotent-replayed'], 'true');
      const mismatch = await as(t.app, owner, withKey(newPet('Other'), key));
      assert.equal(errorCode(mismatch), 'idempotency_key_mismatch');
      // Counted where the pet was made: this instance keeps its own pages (embedded mode).
      assert.equal(await petCount(elsewhere.app, owner), before + 1);
      if (process.env.TEST_DATABASE_URL) {
        // At once on both instances: the second waits for the first's commit, then replays it.
        const raceKey = randomUUID();
        const both = await Promise.all(
          [t, elsewhere].map((one) => as(one.app, owner, withKey(newPet('Race'), raceKey))),
        );
        assert.deepEqual(
          both.map((r) => r.statusCode),
          [201, 201],
        );
        assert.deepEqual(seen(both[0]), seen(both[1]));
        assert.equal(both.filter((r) => r.headers['idempotent-replayed'] === 'true').length, 1);
        assert.equal(await petCount(elsewhere.app, owner), before + 2);
      }
    } finally {
      await elsewhere.close();
    }
  });
});

describe('Idempotency-Key over real HTTP, under concurrent load', () => {
  it('answers 200 concurrent POSTs, half keyed, once each: replays give the same pets, nothing is logged', async () => {
    let logged = '';
    const logStream = new Writable({
      write(chunk, _encoding, done) {
        logged += String(chunk);
        done();
      },
    });
    const t = await startApp({ logStream, env: { LOG_LEVEL: 'warn' } });
    try {
      const owner = await newTenant(t.app);
      const categoryId = (await createCategory(t.app, owner)).id;
      const base = await t.app.listen({ port: 0, host: '127.0.0.1' });
      const send = (i: number, key: string | undefined) =>
        fetch(`${base}/v1/pets`, {
          method: 'POST',
          headers: {
            ...owner.headers,
            'content-type': 'application/json',
            ...(key && { 'idempotency-key': key }),
          },
          body: JSON.stringify({ name: `Load ${i}`, categoryId }),
        }).then(async (res) => ({
          status: res.status,
          id: ((await res.json()) as { id: number }).id,
        }));
      const keys = Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? randomUUID() : undefined));
      const answers = await Promise.all(keys.map((key, i) => send(i, key)));
      assert.deepEqual(new Set(answers.map((a) => a.status)), new Set([201]));
      assert.equal(new Set(answers.map((a) => a.id)).size, 200, 'one pet per request');
      // Sent again, each keyed request is answered from its kept answer: the same pet.
      const replays = await Promise.all(
        keys.flatMap((key, i) => (key ? [send(i, key).then((r) => [r, answers[i]] as const)] : [])),
      );
      for (const [replay, first] of replays) assert.deepEqual(replay, first);
      assert.equal(logged, '', 'nothing logged at warn (a reply sent twice is logged)');
    } finally {
      await t.close();
    }
  });
});
