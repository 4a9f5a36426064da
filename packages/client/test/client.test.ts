import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  AnimalStoreConnectionError,
  AnimalStoreError,
  AuthenticationError,
  ConflictError,
  ConnectionError,
  createClient,
  IdempotencyError,
  type NewPet,
  NotFoundError,
  type Pet,
  type PetStatus,
  ValidationError,
} from '../src/index.js';
import { type ForwardingServer, type Live, live, proxy } from './live.js';

/** The error a call throws (it must throw). */
async function thrown(call: Promise<unknown>): Promise<AnimalStoreError> {
  try {
    await call;
  } catch (error) {
    assert.ok(error instanceof AnimalStoreError, `an AnimalStoreError, not ${String(error)}`);
    return error;
  }
  assert.fail('the call succeeded');
}

// Compile-time: the public names are the service's shapes, not `never` or `any`.
const typed: Pet = { id: 1, name: 'Rex', categoryId: 1, status: 'available' };
const status: PetStatus = typed.status;
// @ts-expect-error a pet has a name
const nameless: NewPet = { categoryId: 1 };
// @ts-expect-error not a status
const wrong: PetStatus = 'lost';
void [status, nameless, wrong];

describe('the SDK against a live server', () => {
  let server: Live;
  before(async () => {
    server = await live();
  });
  after(() => server.close());

  const clientOf = async (options: Parameters<typeof createClient>[0] = {}) => {
    const tenant = await server.tenant();
    return createClient({ apiKey: tenant.key, baseUrl: `${server.origin}/v1`, ...options });
  };

  it('iterates 250 pets through every page of Link', async () => {
    const client = await clientOf();
    const category = await client.categories.create({ name: 'Dogs' });
    for (let n = 0; n < 250; n += 50) {
      await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          client.pets.create({ name: `Pet ${n + i + 1}`, categoryId: category.id }),
        ),
      );
    }
    await client.pets.update(7, { status: 'sold' });

    const ids: number[] = [];
    for await (const pet of client.pets.list()) ids.push(pet.id);
    assert.deepEqual(
      ids,
      Array.from({ length: 250 }, (_, i) => i + 1),
    );

    let pages = 0;
    for await (const page of client.pets.list({ status: 'available', limit: 100 }).pages()) {
      pages++;
      assert.ok(page.items.every((pet) => pet.status === 'available'));
    }
    assert.equal(pages, 3);
    const first = await client.pets.list({ status: 'sold' }).firstPage();
    assert.deepEqual(
      first.items.map((pet) => pet.id),
      [7],
    );
    assert.equal(first.next, undefined);
    assert.equal((await client.pets.get(7)).status, 'sold');
    assert.equal(client.rateLimit?.limit !== undefined, true, 'the last rate-limit state');
  });

  it('throws errors by kind: 401, 404, 409, 400', async () => {
    const noKey = createClient({ apiKey: 'as_test_not_a_key', baseUrl: `${server.origin}/v1` });
    const unauthorized = await thrown(noKey.store.inventory());
    assert.ok(unauthorized instanceof AuthenticationError);
    assert.equal(unauthorized.status, 401);
    assert.equal(unauthorized.code, 'invalid_api_key');
    assert.match(unauthorized.requestId ?? '', /\S/, 'the request id');

    const client = await clientOf();
    const missing = await thrown(client.categories.get(999));
    assert.ok(missing instanceof NotFoundError);
    assert.deepEqual([missing.status, missing.code], [404, 'not_found']);
    assert.ok(missing.requestId);
    const noPet = await thrown(client.pets.get(999));
    assert.ok(noPet instanceof NotFoundError);
    assert.match(noPet.message, /^No pet 999 in this account: list them with pets\.list\(\)/);

    const category = await client.categories.create({ name: 'Cats' });
    await client.pets.create({ name: 'Tom', categoryId: category.id });
    const inUse = await thrown(client.categories.delete(category.id));
    assert.ok(inUse instanceof ConflictError);
    assert.deepEqual([inUse.status, inUse.code], [409, 'category_in_use']);

    const invalid = await thrown(client.pets.create({ name: 'Rex', categoryId: 999 }));
    assert.ok(invalid instanceof ValidationError);
    assert.deepEqual([invalid.status, invalid.code], [400, 'unknown_category']);
  });

  it('signs up and manages keys with the account password', async () => {
    const anonymous = createClient({ baseUrl: server.origin });
    const email = `sdk-${Date.now()}-${Math.random()}@example.com`;
    const credentials = { email, password: 'a long enough password' };
    const account = await anonymous.accounts.create(credentials);
    assert.equal(account.email, email);
    const key = await anonymous.keys.create(credentials, { name: 'sdk' });
    assert.match(key.key, /^as_test_/);
    const client = createClient({ apiKey: key.key, baseUrl: server.origin });
    assert.equal((await client.accounts.get()).id, account.id);
    assert.deepEqual(
      (await anonymous.keys.list(credentials)).map((k) => k.id),
      [key.id],
    );
    await anonymous.keys.revoke(credentials, key.id);
    assert.equal((await thrown(client.accounts.get())).status, 401);
    const wrong = await thrown(anonymous.keys.list({ email, password: 'not the password' }));
    assert.deepEqual([wrong.status, wrong.code], [401, 'invalid_credentials']);
  });

  it('makes a publishable key that reads the catalogue from its origin alone', async () => {
    const anonymous = createClient({ baseUrl: server.origin });
    const credentials = {
      email: `sdk-pk-${Date.now()}-${Math.random()}@example.com`,
      password: 'a long enough password',
    };
    await anonymous.accounts.create(credentials);
    const key = await anonymous.keys.create(credentials, {
      name: 'storefront',
      type: 'publishable',
      allowedOrigins: ['https://shop.example'],
    });
    assert.match(key.key, /^as_pk_test_/);
    assert.deepEqual([key.type, key.allowedOrigins], ['publishable', ['https://shop.example']]);
    const page = createClient({
      apiKey: key.key,
      baseUrl: server.origin,
      headers: { origin: 'https://shop.example' },
    });
    assert.deepEqual(await page.pets.list().toArray(), []);
    const write = await thrown(page.categories.create({ name: 'Dogs' }));
    assert.deepEqual([write.status, write.code], [403, 'insufficient_scope']);
    const elsewhere = createClient({ apiKey: key.key, baseUrl: server.origin });
    const refused = await thrown(elsewhere.pets.list().toArray());
    assert.deepEqual([refused.status, refused.code], [403, 'origin_not_allowed']);
  });

  describe('messages through the messages server', () => {
    let messages: ForwardingServer;
    before(async () => {
      messages = await proxy(server.origin);
    });
    after(() => messages.close());

    it('sends to the messages address and reads the message back', async () => {
      const client = await clientOf({ messagesUrl: messages.origin });
      const queued = await client.messages.send('Hello from the SDK');
      assert.equal(queued.status, 'queued');
      assert.match(queued.id, /^msg_/);
      let message = await client.messages.get(queued.id);
      for (let i = 0; i < 100 && message.status !== 'sent'; i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        message = await client.messages.get(queued.id);
      }
      assert.equal(message.status, 'sent');
      assert.equal(message.message, 'Hello from the SDK');
      // Settled, it can be removed, once.
      assert.equal(await client.messages.delete(queued.id), undefined);
      assert.ok((await thrown(client.messages.get(queued.id))) instanceof NotFoundError);
      assert.ok((await thrown(client.messages.delete(queued.id))) instanceof NotFoundError);
      await client.store.inventory();
      assert.ok(messages.seen.includes('POST /messages'));
      assert.ok(
        messages.seen.every((line) => / \/messages/.test(line)),
        'only messages there',
      );
    });
  });

  it('retries a POST whose answer was lost with the same Idempotency-Key: one pet', async () => {
    const keys: string[] = [];
    let dropped = 0;
    const client = await clientOf({
      fetch: async (request) => {
        if (request.method === 'POST') keys.push(request.headers.get('idempotency-key') ?? '');
        const response = await fetch(request);
        if (request.method === 'POST' && request.url.endsWith('/pets') && dropped === 0) {
          // The service has done it and answered; the client never hears.
          dropped++;
          await response.body?.cancel();
          throw new TypeError('fetch failed (answer dropped by the test)');
        }
        return response;
      },
    });
    const category = await client.categories.create({ name: 'Birds' });
    const pet = await client.pets.create({ name: 'Tweety', categoryId: category.id });
    assert.equal(dropped, 1);
    assert.equal(keys.length, 3, 'the category, then the pet twice');
    assert.notEqual(keys[0], keys[1], 'a fresh key per POST');
    assert.equal(keys[1], keys[2], 'the same key on its retry');
    assert.match(keys[1] ?? '', /^[\w-]{16,}$/);
    const pets = await client.pets.list().toArray();
    assert.deepEqual(pets, [pet], 'one pet');
  });

  it('waits out a 503 with Retry-After from a gateway and retries, the POST with its key', async () => {
    const keys: unknown[] = [];
    let refused = 0;
    const gateway = await proxy(server.origin, (req, res) => {
      if (req.method === 'POST') keys.push(req.headers['idempotency-key']);
      if (req.method !== 'POST' || refused > 0) return false;
      refused++;
      res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' });
      res.end('{"code":"service_unavailable","message":"Try again.","status":503}');
      return true;
    });
    try {
      const client = await clientOf({ baseUrl: gateway.origin });
      const started = Date.now();
      const category = await client.categories.create({ name: 'Horses' });
      assert.ok(Date.now() - started >= 1000, 'waited the Retry-After');
      assert.equal(refused, 1);
      assert.equal(keys.length, 2);
      assert.equal(keys[0], keys[1], 'the retry repeats the key');
      assert.deepEqual(await client.categories.list().toArray(), [category]);
    } finally {
      await gateway.close();
    }
  });

  it('does not repeat a PATCH that got no answer, and keeps a given Idempotency-Key', async () => {
    let patches = 0;
    const seenKeys: Array<string | null> = [];
    const client = await clientOf({
      maxRetries: 3,
      fetch: async (request) => {
        if (request.method === 'PATCH') {
          patches++;
          throw new TypeError('fetch failed (connection reset by the test)');
        }
        if (request.method === 'POST') seenKeys.push(request.headers.get('idempotency-key'));
        return fetch(request);
      },
    });
    const failed = await thrown(client.categories.update(1, { name: 'x' }));
    assert.ok(failed instanceof ConnectionError);
    assert.ok(failed instanceof AnimalStoreConnectionError, 'under its former name too');
    assert.deepEqual([failed.status, failed.code], [0, 'connection_failed']);
    assert.equal(patches, 1, 'a PATCH is not known to be safe to repeat');

    const first = await client.categories.create({ name: 'Fish' }, { idempotencyKey: 'fish-1' });
    const again = await client.categories.create({ name: 'Fish' }, { idempotencyKey: 'fish-1' });
    assert.deepEqual(again, first, 'the first answer, replayed');
    assert.deepEqual(seenKeys, ['fish-1', 'fish-1']);
    const mismatch = await thrown(
      client.categories.create({ name: 'Other' }, { idempotencyKey: 'fish-1' }),
    );
    assert.ok(mismatch instanceof IdempotencyError);
    assert.deepEqual([mismatch.status, mismatch.code], [422, 'idempotency_key_mismatch']);
  });
});
