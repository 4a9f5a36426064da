/**
 * What a call's answer said besides its body, against a live server: `lastResponse` on every
 * result, page and error, `withResponse()` for an answer without a body, headers per client and
 * per call, `appInfo` in the User-Agent, and the `missing_credentials` message.
 */
import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { until } from '../../../test/helpers.js';
import {
  AnimalStoreError,
  ApiPromise,
  AuthenticationError,
  createClient,
  type LastResponse,
  NotFoundError,
  type Pet,
  VERSION,
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

/** A request id as the service makes one (a UUID) when the call names none. */
const MADE_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The rate-limit state an answer of the service always carries for a key. */
function assertRateLimit(response: LastResponse): void {
  const state = response.rateLimit;
  assert.ok(state, 'the answer told the rate-limit state');
  assert.ok(Number.isInteger(state.limit) && state.limit > 0, `limit ${state.limit}`);
  assert.ok(state.remaining >= 0 && state.remaining <= state.limit, `remaining ${state.remaining}`);
  assert.equal(state.reset, Number(response.headers.get('x-ratelimit-reset')));
  assert.equal(state.remaining, Number(response.headers.get('x-ratelimit-remaining')));
}

describe('response metadata against a live server', () => {
  let server: Live;
  let gateway: ForwardingServer;
  /** The headers of each request the gateway forwarded, in order. */
  const seen: IncomingHttpHeaders[] = [];
  before(async () => {
    server = await live();
    gateway = await proxy(server.origin, (req) => {
      seen.push(req.headers);
      return false;
    });
  });
  after(async () => {
    await gateway?.close();
    await server?.close();
  });

  const clientOf = async (options: Parameters<typeof createClient>[0] = {}) => {
    const tenant = await server.tenant();
    return createClient({ apiKey: tenant.key, baseUrl: gateway.origin, ...options });
  };

  it('gives a created resource its answer: request id, 201, the key sent, the rate limit', async () => {
    const client = await clientOf();
    const category = await client.categories.create({ name: 'Dogs' });
    const rex = await client.pets.create({ name: 'Rex', categoryId: category.id });
    const sent = seen.at(-1);

    const { lastResponse } = rex;
    assert.match(lastResponse.requestId ?? '', MADE_ID);
    assert.equal(lastResponse.requestId, lastResponse.headers.get('x-request-id'));
    assert.equal(lastResponse.status, 201);
    assert.equal(lastResponse.idempotentReplayed, false);
    assert.equal(lastResponse.idempotencyKey, sent?.['idempotency-key'], 'the key it sent');
    assert.ok(lastResponse.headers instanceof Headers);
    assertRateLimit(lastResponse);
    assert.notEqual(category.lastResponse.requestId, lastResponse.requestId, 'its own answer');

    // The JSON users get is what it was: the property is not enumerable.
    assert.deepEqual(Object.keys(rex), ['id', 'name', 'categoryId', 'status']);
    assert.equal(JSON.stringify(rex), JSON.stringify({ ...rex }));
    assert.ok(!JSON.stringify(rex).includes('lastResponse'));
    const plain: Pet = { id: rex.id, name: 'Rex', categoryId: category.id, status: 'available' };
    assert.deepEqual(rex, plain);
    assert.throws(() => {
      (rex as { lastResponse: unknown }).lastResponse = undefined;
    }, TypeError);
  });

  it('says when a POST was answered by the replay of its Idempotency-Key', async () => {
    const client = await clientOf();
    const first = await client.categories.create({ name: 'Cats' }, { idempotencyKey: 'cats-1' });
    const again = await client.categories.create({ name: 'Cats' }, { idempotencyKey: 'cats-1' });
    assert.deepEqual(again, first);
    assert.deepEqual(
      [first.lastResponse.idempotentReplayed, again.lastResponse.idempotentReplayed],
      [false, true],
    );
    assert.deepEqual(
      [first.lastResponse.idempotencyKey, again.lastResponse.idempotencyKey],
      ['cats-1', 'cats-1'],
    );
    assert.notEqual(again.lastResponse.requestId, first.lastResponse.requestId);
    // A key given as a header is the key sent, and the one named.
    const byHeader = await client.categories.create(
      { name: 'Birds' },
      { headers: { 'Idempotency-Key': 'birds-1' } },
    );
    assert.equal(byHeader.lastResponse.idempotencyKey, 'birds-1');
    assert.equal(seen.at(-1)?.['idempotency-key'], 'birds-1');
  });

  it('reaches the answer of a call without a body through withResponse()', async () => {
    const client = await clientOf();
    const category = await client.categories.create({ name: 'Fish' });
    const call = client.categories.delete(category.id);
    assert.ok(call instanceof ApiPromise);
    assert.ok(call instanceof Promise);
    const { data, response } = await call.withResponse();
    assert.equal(data, undefined);
    assert.equal(response.status, 204);
    assert.match(response.requestId ?? '', MADE_ID);
    assertRateLimit(response);
    assert.equal(await client.categories.delete(category.id).catch((e) => e.status), 404);

    // Awaited as before, it is `undefined`; withResponse() of a result is that result.
    const other = await client.categories.create({ name: 'Frogs' });
    assert.equal(await client.categories.delete(other.id), undefined);
    const made = await client.categories.create({ name: 'Newts' }).withResponse();
    assert.equal(made.data.lastResponse, made.response);
    assert.equal(made.response.status, 201);
    const chained = await client.store
      .inventory()
      .then((counts) => counts.lastResponse.status)
      .finally(() => {});
    assert.equal(chained, 200);
  });

  it('gives every page its answer, and the list its last page’s', async () => {
    const client = await clientOf();
    const category = await client.categories.create({ name: 'Mice' });
    for (const name of ['A', 'B', 'C']) await client.pets.create({ name, categoryId: category.id });
    const list = client.pets.list({ limit: 2 });
    assert.equal(list.lastResponse, undefined, 'nothing read yet');
    const answers: LastResponse[] = [];
    for await (const page of list.pages()) {
      answers.push(page.lastResponse);
      assert.equal(list.lastResponse, page.lastResponse);
      assert.deepEqual(Object.keys(page), ['items', 'next']);
    }
    assert.equal(answers.length, 2);
    assert.notEqual(answers[0]?.requestId, answers[1]?.requestId);
    for (const answer of answers) {
      assert.equal(answer.status, 200);
      assertRateLimit(answer);
    }
    const all = await client.pets.list().toArray();
    assert.equal(all.length, 3);
    const first = await client.pets.list().firstPage();
    assert.match(first.lastResponse.requestId ?? '', MADE_ID);
  });

  it('gives an error its answer, and a pet missing from the list its request id', async () => {
    const client = await clientOf();
    const missing = await thrown(client.categories.get(999));
    assert.ok(missing instanceof NotFoundError);
    assert.ok(missing.lastResponse);
    assert.equal(missing.lastResponse.status, 404);
    assert.equal(missing.lastResponse.requestId, missing.requestId);
    assert.match(missing.requestId ?? '', MADE_ID);
    assertRateLimit(missing.lastResponse);
    assert.ok(!Object.keys(missing).includes('lastResponse'), 'not enumerable');
    // `pets.get` reads a list: the list's answer is the error's.
    const pet = await thrown(client.pets.get(999));
    assert.ok(pet instanceof NotFoundError);
    assert.equal(pet.lastResponse?.status, 200);
    assert.match(pet.requestId ?? '', MADE_ID);
    // No answer, no metadata.
    const offline = createClient({ baseUrl: 'http://127.0.0.1:9', maxRetries: 0 });
    const refused = await thrown(offline.store.inventory());
    assert.deepEqual([refused.status, refused.lastResponse], [0, undefined]);
  });

  it('sends a call’s X-Request-Id, which becomes the request’s id in the log', async () => {
    const client = await clientOf();
    const id = `sdk-${Date.now()}`;
    const counts = await client.store.inventory({ headers: { 'X-Request-Id': id } });
    assert.equal(counts.lastResponse.requestId, id);
    await until(
      async () =>
        (await client.requests.list({ path: '/v1/store/inventory' }).toArray()).length > 0,
      'the request logged',
    );
    const logged = await client.requests.get(id);
    assert.equal(logged.id, id);
    assert.equal(logged.lastResponse.status, 200);
  });

  it('sends the client’s headers on every request, a call’s over them, on every page', async () => {
    const client = await clientOf({ headers: { 'X-Team': 'pets', 'X-Trace': 'client' } });
    const category = await client.categories.create({ name: 'Owls' });
    for (const name of ['A', 'B']) await client.pets.create({ name, categoryId: category.id });
    const before = seen.length;
    const pets = await client.pets.list({ limit: 1 }, { headers: { 'X-Trace': 'call' } }).toArray();
    assert.equal(pets.length, 2);
    const pages = seen.slice(before);
    assert.equal(pages.length, 2, 'two pages');
    for (const headers of pages) {
      assert.equal(headers['x-team'], 'pets');
      assert.equal(headers['x-trace'], 'call');
      assert.match(String(headers.authorization), /^Bearer as_test_/);
    }
    await client.store.inventory();
    assert.deepEqual([seen.at(-1)?.['x-team'], seen.at(-1)?.['x-trace']], ['pets', 'client']);
    // The key's Authorization goes over one among the client's headers.
    const keyed = await clientOf({ headers: { Authorization: 'Bearer not-this' } });
    await keyed.store.inventory();
    assert.match(String(seen.at(-1)?.authorization), /^Bearer as_test_/);
    assert.throws(() => createClient({ headers: { 'bad name': 'x' } }), {
      name: 'TypeError',
      message: /^headers: /,
    });
  });

  it('names the application of appInfo in the User-Agent, and refuses what would break it', async () => {
    const client = await clientOf({
      appInfo: { name: 'MyApp', version: '1.2', url: 'https://myapp.example/about' },
    });
    await client.store.inventory();
    assert.equal(
      seen.at(-1)?.['user-agent'],
      `animal-store-client/${VERSION} node/${process.versions.node} MyApp/1.2 (https://myapp.example/about)`,
    );
    const nameOnly = await clientOf({ appInfo: { name: 'Cron' } });
    await nameOnly.store.inventory();
    assert.match(String(seen.at(-1)?.['user-agent']), / node\/[\d.]+ Cron$/);
    for (const appInfo of [
      { name: 'My App' },
      { name: '' },
      { name: 'App/2' },
      { name: 'App', version: '1 2' },
      { name: 'App', url: 'https://example.com/(x)' },
      { name: 'App', url: 'https://example.com/\u00e9' },
      { name: 'App\r\nX-Injected: 1' },
    ]) {
      assert.throws(() => createClient({ appInfo }), /^TypeError: appInfo\.\w+ must be /);
    }
  });

  it('names the fix when no API key was sent', async () => {
    const anonymous = createClient({ baseUrl: gateway.origin });
    const none = await thrown(anonymous.store.inventory());
    assert.ok(none instanceof AuthenticationError);
    assert.equal(none.code, 'missing_credentials');
    assert.match(none.message, /createClient\(\{ apiKey: process\.env\.ANIMAL_STORE_KEY \}\)/);
    assert.equal(none.lastResponse?.status, 401);

    // A key the client has, removed on the way: the message says so, not "give a key".
    const stripping = await proxy(server.origin, (req) => {
      delete req.headers.authorization;
      return false;
    });
    try {
      const tenant = await server.tenant();
      const client = createClient({ apiKey: tenant.key, baseUrl: stripping.origin });
      const dropped = await thrown(client.store.inventory());
      assert.equal(dropped.code, 'missing_credentials');
      assert.match(dropped.message, /has an apiKey, yet the service received no Authorization/);
    } finally {
      await stripping.close();
    }
  });
});

// Compile-time: the metadata is typed on results, and a result without a body has none.
export async function typed(client: ReturnType<typeof createClient>): Promise<string> {
  const pet = await client.pets.create({ name: 'Rex', categoryId: 1 });
  const id: string | undefined = pet.lastResponse.requestId;
  const replayed: boolean = pet.lastResponse.idempotentReplayed;
  const removed = await client.pets.delete(pet.id);
  // @ts-expect-error an answer without a body is void: its answer is withResponse()'s
  void removed.lastResponse;
  const { response } = await client.pets.delete(pet.id).withResponse();
  const status: number = response.status;
  // Code that named the former return types still compiles.
  const pending: Promise<Pet> = client.pets.get(1);
  const gone: Promise<void> = client.pets.delete(1);
  await Promise.all([pending, gone]);
  const keys = await client.keys.list({ email: 'a@example.com', password: 'p' });
  const remaining: number | undefined = keys.lastResponse.rateLimit?.remaining;
  return `${id}${replayed}${status}${remaining}`;
}
