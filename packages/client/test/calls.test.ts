/**
 * A call's signal and time limit on every page and every wait, its User-Agent, and the error
 * class of each kind of answer: against a fetch of the test's own, no server.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { userAgent } from '../src/client.js';
import {
  AnimalStoreError,
  AuthenticationError,
  ConflictError,
  ConnectionError,
  createClient,
  ERROR_STATUS,
  type ErrorCode,
  type Event,
  type Fetch,
  IdempotencyError,
  NotFoundError,
  type Order,
  PermissionError,
  type Pet,
  RateLimitError,
  ServerError,
  ValidationError,
  VERSION,
} from '../src/index.js';

const BASE = 'http://127.0.0.1:8080/v1';

/**
 * Five pages of one pet (`/pets?cursor=N`); `answer` may answer a page otherwise. No
 * rate-limit headers: the client does not hold requests back to learn the limits.
 */
function fivePages(answer?: (page: number, request: Request) => Promise<Response> | undefined) {
  const seen: Request[] = [];
  const fetch: Fetch = async (request) => {
    seen.push(request);
    const page = Number(new URL(request.url).searchParams.get('cursor') ?? '1');
    const special = answer?.(page, request);
    if (special) return special;
    const headers: Record<string, string> = {};
    if (page < 5) headers.link = `<${BASE}/pets?cursor=${page + 1}>; rel="next"`;
    return Response.json([{ id: page, name: `Pet ${page}`, categoryId: 1, status: 'available' }], {
      headers,
    });
  };
  return { fetch, seen };
}

/**
 * An answer that never comes, unless its request is aborted. A timer stands for the socket a
 * real request would hold open (AbortSignal.timeout's own timer does not keep Node running).
 */
function hang(request: Request): Promise<Response> {
  const socket = setInterval(() => {}, 1_000);
  return new Promise((_, reject) => {
    request.signal.addEventListener(
      'abort',
      () => {
        clearInterval(socket);
        reject(request.signal.reason);
      },
      { once: true },
    );
  });
}

async function thrown(call: Promise<unknown>): Promise<AnimalStoreError> {
  try {
    await call;
  } catch (error) {
    assert.ok(error instanceof AnimalStoreError, `an AnimalStoreError, not ${String(error)}`);
    return error;
  }
  assert.fail('the call succeeded');
}

describe('a call’s signal and time limit', () => {
  it('stop a walk through pages at the page it is on', async () => {
    const { fetch, seen } = fivePages();
    const client = createClient({ fetch });
    const stop = new AbortController();
    const names: string[] = [];
    const error = await thrown(
      (async () => {
        for await (const pet of client.pets.list({}, { signal: stop.signal })) {
          names.push(pet.name);
          stop.abort();
        }
      })(),
    );
    assert.ok(error instanceof ConnectionError);
    assert.equal(error.code, 'aborted');
    assert.deepEqual(names, ['Pet 1']);
    assert.equal(seen.length, 1, 'no later page is requested');
  });

  it('send every page with the call’s signal', async () => {
    const { fetch, seen } = fivePages();
    const client = createClient({ fetch, timeoutMs: 0 });
    const stop = new AbortController();
    assert.equal((await client.pets.list({}, { signal: stop.signal }).toArray()).length, 5);
    assert.equal(seen.length, 5);
    stop.abort();
    assert.ok(
      seen.every((request) => request.signal.aborted),
      'each page’s request',
    );
  });

  it('cancel the rate-limit wait of a later page', { timeout: 10_000 }, async () => {
    // Page 3 is refused with a minute to wait: the client waits (less than maxWaitMs).
    const { fetch, seen } = fivePages((page) =>
      page === 3
        ? Promise.resolve(
            Response.json(
              { code: 'rate_limited', message: 'Slow down.', status: 429 },
              { status: 429, headers: { 'retry-after': '60' } },
            ),
          )
        : undefined,
    );
    const client = createClient({ fetch });
    const stop = new AbortController();
    const walk = client.pets.list({}, { signal: stop.signal }).toArray();
    while (seen.length < 3) await new Promise((resolve) => setTimeout(resolve, 5));
    stop.abort();
    const error = await thrown(walk);
    assert.deepEqual([error.constructor, error.code], [ConnectionError, 'aborted']);
    assert.equal(seen.length, 3, 'not sent again');

    // The key is held back for that minute: a call with a time limit waits, then fails unsent.
    const limited = await thrown(client.store.inventory({ timeoutMs: 50 }));
    assert.deepEqual([limited.constructor, limited.code], [ConnectionError, 'timeout']);
    assert.equal(seen.length, 3, 'the wait ended the call, nothing was sent');
  });

  it('give each page the call’s time limit', { timeout: 10_000 }, async () => {
    const { fetch, seen } = fivePages((page, request) => (page === 2 ? hang(request) : undefined));
    const client = createClient({ fetch });
    const error = await thrown(client.pets.list({}, { timeoutMs: 100 }).toArray());
    assert.deepEqual([error.constructor, error.code], [ConnectionError, 'timeout']);
    assert.equal(seen.length, 2);
  });
});

describe('the User-Agent', () => {
  it('names the client and Node, where a script may set it', async () => {
    const { fetch, seen } = fivePages();
    await createClient({ fetch }).pets.list().firstPage();
    const expected = `animal-store-client/${VERSION} node/${process.versions.node}`;
    assert.equal(seen[0]?.headers.get('user-agent'), expected);
    assert.equal(
      userAgent({ versions: { node: '24.1.0' } }, false),
      `animal-store-client/${VERSION} node/24.1.0`,
    );
    assert.equal(userAgent({}, false), undefined, 'no Node');
    assert.equal(userAgent({ versions: { node: '24.1.0' } }, true), undefined, 'a browser');
    assert.equal(
      userAgent({ versions: { node: '24.1.0' } }, false, 'MyApp/1.2 (https://myapp.example)'),
      `animal-store-client/${VERSION} node/24.1.0 MyApp/1.2 (https://myapp.example)`,
    );
    assert.equal(userAgent({ versions: { node: '24.1.0' } }, true, 'MyApp/1.2'), undefined);
  });

  it('says the version of package.json', () => {
    const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
    assert.equal(VERSION, manifest.version, 'npm run build -w @animal-store/client writes it');
  });
});

describe('errors by kind', () => {
  /** A client whose every call is answered with this error. */
  const answering = (status: number, body: unknown, headers: Record<string, string> = {}) =>
    createClient({
      maxRetries: 0,
      fetch: async () =>
        new Response(JSON.stringify(body), {
          status,
          headers: { 'content-type': 'application/json', 'x-request-id': 'req-1', ...headers },
        }),
    });
  const cases: Array<[ErrorCode | 'http_502', unknown]> = [
    ['invalid_api_key', AuthenticationError],
    ['missing_credentials', AuthenticationError],
    ['csrf_failed', PermissionError],
    ['not_found', NotFoundError],
    ['endpoint_removed', NotFoundError],
    ['category_in_use', ConflictError],
    ['validation_failed', ValidationError],
    ['unknown_category', ValidationError],
    ['payload_too_large', ValidationError],
    ['invalid_idempotency_key', IdempotencyError],
    ['idempotency_key_in_use', IdempotencyError],
    ['idempotency_key_mismatch', IdempotencyError],
    ['rate_limited', RateLimitError],
    ['key_banned', RateLimitError],
    ['internal_error', ServerError],
    ['outcome_unknown', ServerError],
    ['method_not_allowed', AnimalStoreError],
  ];

  for (const [code, kind] of cases) {
    it(`${code} is a ${(kind as { name: string }).name}, with its requestId`, async () => {
      const status = ERROR_STATUS[code as ErrorCode];
      const error = await thrown(
        answering(status, { code, message: 'm', status }, { 'retry-after': '1' }).categories.get(1),
      );
      assert.equal(error.constructor, kind);
      assert.ok(error instanceof AnimalStoreError);
      assert.deepEqual([error.status, error.code, error.requestId], [status, code, 'req-1']);
      assert.equal(error.name, (kind as { name: string }).name);
    });
  }

  it('a gateway’s answer without an Error body is an http_<status> of its kind', async () => {
    const client = createClient({
      maxRetries: 0,
      fetch: async () => new Response('<html>Bad gateway</html>', { status: 502 }),
    });
    const error = await thrown(client.store.inventory());
    assert.ok(error instanceof ServerError);
    assert.deepEqual([error.status, error.code], [502, 'http_502']);
  });

  it('no answer is a ConnectionError, status 0', async () => {
    const client = createClient({
      maxRetries: 0,
      fetch: async () => {
        throw new TypeError('fetch failed');
      },
    });
    const error = await thrown(client.store.inventory());
    assert.ok(error instanceof ConnectionError);
    assert.deepEqual([error.status, error.code], [0, 'connection_failed']);
  });
});

// Compile-time: an event's `data` follows its `type`, and `code` is the documented union.
export function dataOf(event: Event): string {
  switch (event.type) {
    case 'pet.created':
    case 'pet.deleted': {
      const pet: Pet = event.data;
      return pet.name;
    }
    case 'order.placed': {
      const order: Order = event.data;
      // @ts-expect-error an order is no pet
      const pet: Pet = event.data;
      return `${order.petId}${pet}`;
    }
    case 'message.failed':
      return event.data.failureReason ?? '';
    case 'webhook.test':
      return event.data.webhookId;
    default:
      return event.type;
  }
}
export function isNotFound(error: AnimalStoreError): boolean {
  // @ts-expect-error not a documented code
  if (error.code === 'no_such_code') return false;
  return error.code === 'not_found';
}
