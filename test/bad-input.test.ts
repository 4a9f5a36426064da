/**
 * Malformed requests: every one gets a 4xx Error body `{code, message, status}` (status equal to
 * the HTTP status), never a 500, and writes nothing. Valid but unusual Unicode goes through
 * untouched.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { MAX_JSON_DEPTH } from '../src/plugins/requests.js';
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
  type TestApp,
} from './helpers.js';

const JSON_TYPE = { 'content-type': 'application/json' };
const PASSWORD = 'correct horse battery staple';

/** Asserts a 4xx Error body with one of the given statuses and codes; returns the body. */
function expectError(
  res: LightMyRequestResponse,
  statuses: number | number[],
  codes: string | string[] | undefined,
  label: string,
): { code: string; message: string; status: number; details?: unknown[] } {
  const allowed = [statuses].flat();
  assert.ok(
    allowed.includes(res.statusCode),
    `${label}: expected ${allowed.join(' or ')}, got ${res.statusCode} ${res.body.slice(0, 300)}`,
  );
  assert.match(String(res.headers['content-type']), /^application\/json/, label);
  let code: string;
  try {
    code = errorCode(res);
  } catch (err) {
    assert.fail(`${label}: ${(err as Error).message}`);
  }
  const body = res.json();
  const extra = Object.keys(body).filter(
    (k) => !['code', 'message', 'status', 'details'].includes(k),
  );
  assert.deepEqual(extra, [], `${label}: unexpected fields in the Error body`);
  if (codes !== undefined) {
    assert.ok([codes].flat().includes(code), `${label}: code ${code}, expected ${codes}`);
  }
  return body;
}

/** `base` as JSON text with `field` set to the raw JSON text `raw` (big numbers, escapes…). */
function withRaw(base: Record<string, unknown>, field: string, raw: string): string {
  const marker = `__raw_${randomUUID()}__`;
  return JSON.stringify({ ...base, [field]: marker }).replace(`"${marker}"`, raw);
}

let t: TestApp;
let owner: Tenant;
let category: { id: number; name: string };
let pet: { id: number; name: string; categoryId: number; status: string };
let ownerBefore: unknown;

async function ownerState(): Promise<unknown> {
  const read = async (url: string) => {
    const res = await as(t.app, owner, { method: 'GET', url });
    assert.equal(res.statusCode, 200, `${url}: ${res.body}`);
    return res.json();
  };
  return {
    pets: await read('/v1/pets?limit=100'),
    categories: await read('/v1/categories?limit=100'),
  };
}

before(async () => {
  t = await startApp();
  owner = await newTenant(t.app);
  category = await createCategory(t.app, owner, 'Birds');
  pet = await createPet(t.app, owner, { name: 'Tweety', categoryId: category.id });
  ownerBefore = await ownerState();
});
after(() => t?.close());

/** An operation that takes a JSON body, and how to tell that a refused request wrote nothing. */
interface Target {
  name: string;
  method: 'POST' | 'PATCH';
  url: () => string;
  /** Credentials; sign-up has none. */
  auth: boolean;
  /** A body the operation accepts. */
  valid: () => Record<string, unknown>;
  /** Fields holding text a person typed, with the name rules. */
  textFields: string[];
  /** Fields holding an id. */
  idFields: string[];
  nothingWritten: () => Promise<void>;
}

/** Emails sent to sign-up in refused requests: none of them may have become an account. */
const refusedEmails: string[] = [];

async function assertNoAccounts(): Promise<void> {
  for (const email of refusedEmails.splice(0)) {
    const res = await t.app.inject({
      method: 'GET',
      url: '/v1/keys',
      headers: { authorization: basic(email, PASSWORD) },
      remoteAddress: freshIp(),
    });
    assert.equal(res.statusCode, 401, `an account was created for ${email}`);
    assert.equal(errorCode(res), 'invalid_credentials');
  }
}

const catalogueUnchanged = async () => assert.deepEqual(await ownerState(), ownerBefore);

const targets: Target[] = [
  {
    name: 'POST /v1/pets',
    method: 'POST',
    url: () => '/v1/pets',
    auth: true,
    valid: () => ({ name: 'Polly', categoryId: category.id }),
    textFields: ['name'],
    idFields: ['categoryId'],
    nothingWritten: catalogueUnchanged,
  },
  {
    name: 'PATCH /v1/pets/{petId}',
    method: 'PATCH',
    url: () => `/v1/pets/${pet.id}`,
    auth: true,
    valid: () => ({ name: 'Polly', categoryId: category.id, status: 'pending' }),
    textFields: ['name'],
    idFields: ['categoryId'],
    nothingWritten: catalogueUnchanged,
  },
  {
    name: 'POST /v1/categories',
    method: 'POST',
    url: () => '/v1/categories',
    auth: true,
    valid: () => ({ name: 'Fish' }),
    textFields: ['name'],
    idFields: [],
    nothingWritten: catalogueUnchanged,
  },
  {
    name: 'PATCH /v1/categories/{categoryId}',
    method: 'PATCH',
    url: () => `/v1/categories/${category.id}`,
    auth: true,
    valid: () => ({ name: 'Fish' }),
    textFields: ['name'],
    idFields: [],
    nothingWritten: catalogueUnchanged,
  },
  {
    name: 'POST /v1/accounts',
    method: 'POST',
    url: () => '/v1/accounts',
    auth: false,
    valid: () => {
      const email = `refused-${randomUUID()}@example.com`;
      refusedEmails.push(email);
      return { email, password: PASSWORD };
    },
    textFields: [],
    idFields: [],
    nothingWritten: assertNoAccounts,
  },
];

function send(
  target: Target,
  payload: string | Buffer | undefined,
  headers: Record<string, string> = JSON_TYPE,
): Promise<LightMyRequestResponse> {
  const options: InjectOptions = {
    method: target.method,
    url: target.url(),
    headers,
    ...(payload !== undefined && { payload }),
  };
  return target.auth
    ? as(t.app, owner, options)
    : t.app.inject({ ...options, remoteAddress: freshIp() });
}

for (const target of targets) {
  describe(`${target.name}: malformed bodies`, () => {
    it('accepts the valid body used as the base of the cases below', async () => {
      // Keeps the cases honest: each one fails for its own defect, not for the base body. The
      // check runs on a scratch tenant (or a fresh email), so the owner's data stays as it was.
      const scratch = await newTenant(t.app);
      const scratchCategory = await createCategory(t.app, scratch, 'Scratch');
      const scratchPet = await createPet(t.app, scratch, { categoryId: scratchCategory.id });
      const body = { ...target.valid() };
      if ('categoryId' in body) body.categoryId = scratchCategory.id;
      if ('email' in body) refusedEmails.pop();
      const url = target
        .url()
        .replace(`/pets/${pet.id}`, `/pets/${scratchPet.id}`)
        .replace(`/categories/${category.id}`, `/categories/${scratchCategory.id}`);
      const options: InjectOptions = { method: target.method, url, payload: body };
      const res = target.auth ? await as(t.app, scratch, options) : await t.app.inject(options);
      assert.ok(res.statusCode >= 200 && res.statusCode < 300, `${res.statusCode} ${res.body}`);
    });

    it('invalid JSON → 400 invalid_json', async () => {
      const base = JSON.stringify(target.valid());
      for (const text of [
        '{',
        base.slice(0, -1),
        `${base}}`,
        `${base} trailing`,
        base.replace(/"(\w+)":/, '$1:'),
        base.replaceAll('"', "'"),
        base.replace(/}$/, ',}'),
        '{"name":"a\\x"}',
        '{"name":"\\u12"}',
        '{"name":"line\nbreak"}',
        'NaN',
        'undefined',
        '   ',
      ]) {
        const res = await send(target, text);
        expectError(res, 400, 'invalid_json', JSON.stringify(text));
      }
      await target.nothingWritten();
    });

    it('JSON that is not an object (array, string, number, boolean, null) → 400', async () => {
      for (const text of [
        '[]',
        `[${JSON.stringify(target.valid())}]`,
        '"x"',
        '""',
        '42',
        'true',
        'null',
      ]) {
        const res = await send(target, text);
        expectError(res, 400, ['validation_failed', 'invalid_json'], text);
      }
      await target.nothingWritten();
    });

    it('a missing body → 400', async () => {
      const none = await send(target, undefined, {});
      expectError(none, 400, ['validation_failed', 'invalid_json'], 'no body, no content type');
      const empty = await send(target, '', JSON_TYPE);
      expectError(empty, 400, ['validation_failed', 'invalid_json'], 'empty JSON body');
      await target.nothingWritten();
    });

    it('a wrong or missing content type → 400 unsupported_content_type', async () => {
      const json = JSON.stringify(target.valid());
      const cases: Array<[string, string | Buffer, Record<string, string>]> = [
        ['text/plain', json, { 'content-type': 'text/plain' }],
        ['text/plain; charset=utf-8', json, { 'content-type': 'text/plain; charset=utf-8' }],
        [
          'application/x-www-form-urlencoded',
          new URLSearchParams(
            Object.entries(target.valid()).map(([k, v]): [string, string] => [k, String(v)]),
          ).toString(),
          { 'content-type': 'application/x-www-form-urlencoded' },
        ],
        [
          'x-www-form-urlencoded with a JSON body',
          json,
          {
            'content-type': 'application/x-www-form-urlencoded',
          },
        ],
        [
          'multipart/form-data',
          '--x\r\n\r\n--x--',
          {
            'content-type': 'multipart/form-data; boundary=x',
          },
        ],
        ['application/xml', '<pet/>', { 'content-type': 'application/xml' }],
        ['application/jsonx', json, { 'content-type': 'application/jsonx' }],
        ['garbage content type', json, { 'content-type': ';;;' }],
        ['no content type with a body', Buffer.from(json), {}],
      ];
      for (const [label, payload, headers] of cases) {
        const res = await send(target, payload, headers);
        const body = expectError(res, 400, 'unsupported_content_type', label);
        assert.match(body.message, /application\/json/i, label);
      }
      await target.nothingWritten();
    });

    it('unknown fields → 400 validation_failed naming the field', async () => {
      const extras: Array<[string, unknown]> = [
        ['extra', 1],
        ['id', 999],
        ['accountId', 'acct_someoneElse'],
        ['account_id', 'acct_someoneElse'],
        ['createdAt', '2020-01-01T00:00:00Z'],
        ['plan', 'enterprise'],
        ['Name', 'Case matters'],
      ];
      for (const [field, value] of extras) {
        const res = await send(target, JSON.stringify({ ...target.valid(), [field]: value }));
        const body = expectError(res, 400, 'validation_failed', field);
        assert.ok(
          JSON.stringify(body).includes(field),
          `${field}: the error does not name the field: ${res.body}`,
        );
      }
      await target.nothingWritten();
    });

    it('__proto__ and constructor.prototype keys → 400, and no prototype is polluted', async () => {
      const valid = target.valid();
      for (const text of [
        withRaw(valid, '__proto__', '{"polluted":true}'),
        withRaw(valid, 'constructor', '{"prototype":{"polluted":true}}'),
        withRaw(valid, 'nested', '{"__proto__":{"polluted":true}}'),
        `{"__proto__":${JSON.stringify(valid)}}`,
      ]) {
        const res = await send(target, text);
        expectError(res, 400, ['invalid_json', 'validation_failed', 'bad_request'], text);
      }
      assert.equal(
        ({} as Record<string, unknown>).polluted,
        undefined,
        'Object.prototype polluted',
      );
      await target.nothingWritten();
    });

    it('a 2 MB body → 413 payload_too_large (or 400)', async () => {
      const big = 'x'.repeat(2 * 1024 * 1024);
      const field = target.textFields[0] ?? 'password';
      for (const text of [
        JSON.stringify({ ...target.valid(), [field]: big }),
        JSON.stringify({ ...target.valid(), padding: big }),
        `[${'1,'.repeat(1024 * 1024)}1]`,
      ]) {
        const res = await send(target, text);
        expectError(res, [413, 400], ['payload_too_large', 'validation_failed'], 'big body');
      }
      await target.nothingWritten();
    });

    for (const field of target.textFields) {
      it(`"${field}": blank, too long, control characters, lone surrogates, wrong types → 400 validation_failed`, async () => {
        const cases: Array<[string, string]> = [
          ['empty', '""'],
          ['a space', '" "'],
          ['whitespace only', '"  \\t  "'],
          ['no-break and ideographic spaces only', '"\\u00a0\\u3000"'],
          ['newline only', '"\\n"'],
          ['201 characters', JSON.stringify('a'.repeat(201))],
          ['10,000 characters', JSON.stringify('x'.repeat(10_000))],
          ['a NUL byte', '"Rex\\u0000"'],
          ['only a NUL byte', '"\\u0000"'],
          ['a bell', '"Re\\u0007x"'],
          ['an ANSI escape', '"\\u001b[31mRex"'],
          ['a newline', '"Re\\nx"'],
          ['a tab', '"Re\\tx"'],
          ['a carriage return', '"Rex\\r"'],
          ['DEL', '"Rex\\u007f"'],
          ['a C1 control (NEL)', '"Rex\\u0085"'],
          ['a lone high surrogate', '"Rex\\ud800"'],
          ['a lone low surrogate', '"\\udc00Rex"'],
          ['surrogates in the wrong order', '"\\udc00\\ud800"'],
          ['a number', '42'],
          ['null', 'null'],
          ['true', 'true'],
          ['an array', '["Rex"]'],
          ['an object', '{"first":"Rex"}'],
        ];
        for (const [label, raw] of cases) {
          const res = await send(target, withRaw(target.valid(), field, raw));
          const body = expectError(res, 400, 'validation_failed', `${field}: ${label}`);
          assert.ok(
            JSON.stringify(body.details ?? body.message).includes(field),
            `${field}: ${label}: the error does not say where: ${res.body}`,
          );
        }
        await target.nothingWritten();
      });
    }

    for (const field of target.idFields) {
      it(`"${field}": wrong types and out-of-range numbers → 400 validation_failed`, async () => {
        const cases = [
          `"${category.id}"`,
          '"1"',
          '1.5',
          `${category.id}.5`,
          'true',
          'null',
          `[${category.id}]`,
          '{}',
          '"abc"',
          '0',
          '-0',
          '-1',
          '9223372036854775807',
          '9223372036854775808',
          '99999999999999999999',
          '-9223372036854775809',
          '1e400',
          '-1e400',
        ];
        for (const raw of cases) {
          const res = await send(target, withRaw(target.valid(), field, raw));
          const body = expectError(res, 400, 'validation_failed', `${field}: ${raw}`);
          assert.ok(JSON.stringify(body).includes(field), `${field}: ${raw}: ${res.body}`);
        }
        await target.nothingWritten();
      });
    }

    if (target.name.includes('/pets')) {
      it('"status" outside the enumeration → 400 validation_failed', async () => {
        for (const raw of [
          '"SOLD"',
          '"Available"',
          '"lost"',
          '""',
          '" sold"',
          'null',
          '1',
          '["sold"]',
        ]) {
          const res = await send(target, withRaw(target.valid(), 'status', raw));
          expectError(res, 400, 'validation_failed', `status: ${raw}`);
        }
        await target.nothingWritten();
      });
    }
  });
}

describe('path ids', () => {
  const idRoutes: Array<[InjectOptions['method'], string, Record<string, unknown> | undefined]> = [
    ['GET', '/v1/pets/', undefined],
    ['PATCH', '/v1/pets/', { name: 'Renamed' }],
    ['DELETE', '/v1/pets/', undefined],
    ['GET', '/v1/categories/', undefined],
    ['PATCH', '/v1/categories/', { name: 'Renamed' }],
    ['DELETE', '/v1/categories/', undefined],
  ];

  it('non-numeric, ≤ 0, fractional or beyond int64 → 400 validation_failed', async () => {
    for (const [method, prefix, payload] of idRoutes) {
      for (const id of [
        '0',
        '-1',
        `-${pet.id}`,
        'abc',
        '1.5',
        '9223372036854775807',
        '9223372036854775808',
        '99999999999999999999',
        '1e400',
        'NaN',
        'Infinity',
        'null',
        '%00',
        `${pet.id}%00`,
        '%F0%9F%90%B6',
        `${pet.id}%3B%20DROP%20TABLE%20pets`,
        "1'%20OR%20'1'%3D'1",
      ]) {
        const res = await as(t.app, owner, {
          method,
          url: `${prefix}${id}`,
          ...(payload && { payload }),
        });
        expectError(res, 400, 'validation_failed', `${method} ${prefix}${id}`);
      }
    }
    await catalogueUnchanged();
  });

  it('only plain decimal digits name an id: 0x…, exponents, ".0", "+" and spaces → 400', async () => {
    // Read-only on a tenant of its own: if such spellings resolve, they must not be able to
    // touch anything the other checks rely on.
    const tenant = await newTenant(t.app);
    const own = await createCategory(t.app, tenant, 'Spellings');
    const target = await createPet(t.app, tenant, { categoryId: own.id });
    const accepted: string[] = [];
    for (const [prefix, id] of [
      ['/v1/pets/', target.id],
      ['/v1/categories/', own.id],
    ] as const) {
      for (const spelling of [
        `0x${id.toString(16)}`,
        `${id}e0`,
        `${id / 10}e1`,
        `${id}.0`,
        `+${id}`,
        `%20${id}`,
        `${id}%20`,
      ]) {
        const res = await as(t.app, tenant, { method: 'GET', url: `${prefix}${spelling}` });
        if (res.statusCode !== 400) accepted.push(`${prefix}${spelling} → ${res.statusCode}`);
        else expectError(res, 400, 'validation_failed', spelling);
      }
    }
    for (const limit of ['1e1', '0x10', '10.0', '+10', '%2010']) {
      const res = await as(t.app, tenant, { method: 'GET', url: `/v1/pets?limit=${limit}` });
      if (res.statusCode !== 400) accepted.push(`/v1/pets?limit=${limit} → ${res.statusCode}`);
    }
    assert.deepEqual(accepted, [], 'non-canonical numbers were accepted as ids or limits');
  });

  it('a URL with bad percent-encoding → 400 Error body', async () => {
    for (const url of ['/v1/pets/%zz', '/v1/pets/%', '/v1/categories/%E0%A4%A', '/v1/%zz']) {
      const res = await as(t.app, owner, { method: 'GET', url });
      expectError(res, [400, 404], ['bad_request', 'validation_failed', 'route_not_found'], url);
    }
    const anonymous = await t.app.inject({
      method: 'GET',
      url: '/v1/pets/%zz',
      remoteAddress: freshIp(),
    });
    expectError(anonymous, [400, 401, 404], undefined, 'without credentials');
    // The path is not Fastify's to echo as HTML or a stack: the message stays short.
    for (const url of ['/v1/pets/%zz', `/v1/pets/${'9'.repeat(300)}`]) {
      const res = await as(t.app, owner, { method: 'GET', url });
      const body = expectError(res, [400, 404], undefined, url);
      assert.ok(!/at .+\.(ts|js):\d+/.test(body.message), `${url}: stack in message`);
    }
    await catalogueUnchanged();
  });
});

describe('Host header', () => {
  it('a Host that is not host[:port] → 400 before anything is written', async () => {
    const category = (await as(t.app, owner, { method: 'GET', url: '/v1/categories' })).json()[0];
    for (const host of ['a^b', 'a b', 'x|y', '[::1', 'a%zz', 'a/b', 'h:99999x']) {
      const res = await as(t.app, owner, {
        method: 'POST',
        url: '/v1/pets',
        headers: { host },
        payload: { name: 'Hosted', categoryId: category.id },
      });
      expectError(res, 400, 'bad_request', host);
    }
    const portal = await t.app.inject({ url: '/portal/sign-in', headers: { host: 'a^b' } });
    assert.equal(portal.statusCode, 400);
    await catalogueUnchanged();
    for (const host of ['api.example.com', 'localhost:8080', '127.0.0.1:1', '[::1]:8080']) {
      const res = await as(t.app, owner, { method: 'GET', url: '/v1/pets', headers: { host } });
      assert.equal(res.statusCode, 200, host);
    }
  });
});

describe('query parameters', () => {
  for (const list of ['/v1/pets', '/v1/categories']) {
    it(`${list}: limit 0, 101, abc, -1, 1.5, empty or repeated → 400 validation_failed`, async () => {
      for (const query of [
        'limit=0',
        'limit=101',
        'limit=abc',
        'limit=-1',
        'limit=1.5',
        'limit=',
        'limit=99999999999999999999',
        'limit=1&limit=2',
        'limit=%zz',
      ]) {
        const res = await as(t.app, owner, { method: 'GET', url: `${list}?${query}` });
        const body = expectError(res, 400, 'validation_failed', query);
        assert.ok(JSON.stringify(body).includes('limit'), `${query}: ${res.body}`);
      }
    });

    it(`${list}: a garbage cursor → 400`, async () => {
      for (const cursor of [
        'garbage',
        '%zz',
        '%00',
        'x'.repeat(65),
        encodeURIComponent('k1.1'),
        Buffer.from('k1.0').toString('base64url'),
        Buffer.from('k1.99999999999999999999').toString('base64url'),
        Buffer.from('k2.1').toString('base64url'),
        encodeURIComponent('<script>'),
      ]) {
        const res = await as(t.app, owner, { method: 'GET', url: `${list}?cursor=${cursor}` });
        expectError(res, 400, ['invalid_cursor', 'validation_failed'], `cursor=${cursor}`);
      }
      const twice = await as(t.app, owner, { method: 'GET', url: `${list}?cursor=a&cursor=b` });
      expectError(twice, 400, ['invalid_cursor', 'validation_failed'], 'two cursors');
    });
  }

  it('/v1/pets: an unknown status filter → 400 validation_failed', async () => {
    for (const status of ['lost', 'SOLD', '', 'available,sold']) {
      const res = await as(t.app, owner, {
        method: 'GET',
        url: `/v1/pets?status=${encodeURIComponent(status)}`,
      });
      expectError(res, 400, 'validation_failed', `status=${status}`);
    }
  });
});

describe('deep bodies', () => {
  it(`nested past ${MAX_JSON_DEPTH} levels → 400 invalid_json, whatever the operation`, async () => {
    const deep = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
    // An operation without a body schema, with an Idempotency-Key, fingerprints the body whole.
    for (const [url, key] of [
      ['/v1/webhooks/wh_none/test', 'deep-1'],
      ['/v1/pets', undefined],
      ['/v1/categories', 'deep-2'],
    ] as const) {
      for (const payload of [deep(10_000), `{"a":${deep(MAX_JSON_DEPTH)}}`]) {
        const res = await as(t.app, owner, {
          method: 'POST',
          url,
          headers: { ...JSON_TYPE, ...(key && { 'idempotency-key': `${key}-${payload.length}` }) },
          payload,
        });
        expectError(res, 400, 'invalid_json', `${url} ${payload.length}`);
      }
    }
    // As deep as allowed, and brackets inside strings, are read as JSON (and refused as bodies).
    for (const payload of [deep(MAX_JSON_DEPTH), `{"name":"${'['.repeat(500)}"}`]) {
      const res = await as(t.app, owner, {
        method: 'POST',
        url: '/v1/categories',
        payload,
        headers: JSON_TYPE,
      });
      expectError(res, 400, 'validation_failed', payload.slice(0, 20));
    }
    await catalogueUnchanged();
  });
});

describe('routing', () => {
  it('an unknown route → 404 route_not_found, with or without credentials', async () => {
    for (const url of [
      '/v1/nope',
      '/nope',
      '/v2/pets',
      '/v1/pets/1/extra',
      '/v1/Pets',
      '/v1/categories/1/pets/1',
      `/v1/${'a'.repeat(5000)}`,
    ]) {
      const authed = await as(t.app, owner, { method: 'GET', url });
      expectError(authed, 404, 'route_not_found', url);
      assert.equal(authed.headers.allow, undefined, `${url}: Allow`);
      const anonymous = await t.app.inject({ method: 'GET', url, remoteAddress: freshIp() });
      expectError(anonymous, 404, 'route_not_found', `${url} without credentials`);
    }
    const post = await as(t.app, owner, { method: 'POST', url: '/v1/nope', payload: { a: 1 } });
    expectError(post, 404, 'route_not_found', 'POST /v1/nope');
  });

  it('a known path with another method → 405 method_not_allowed with Allow, and writes nothing', async () => {
    // [method, path, the methods the path is served with]
    const cases: Array<[InjectOptions['method'], string, string]> = [
      ['PUT', `/v1/pets/${pet.id}`, 'GET, HEAD, PATCH, DELETE'],
      ['PUT', `/v1/categories/${category.id}`, 'GET, HEAD, PATCH, DELETE'],
      ['DELETE', '/v1/pets', 'GET, HEAD, POST'],
      ['PATCH', '/v1/pets', 'GET, HEAD, POST'],
      ['PUT', '/v1/pets', 'GET, HEAD, POST'],
      ['DELETE', '/v1/categories', 'GET, HEAD, POST'],
      ['POST', `/v1/pets/${pet.id}`, 'GET, HEAD, PATCH, DELETE'],
      ['POST', '/v1/account', 'GET, HEAD'],
      ['DELETE', '/v1/account', 'GET, HEAD'],
      ['PATCH', '/v1/accounts', 'POST'],
      ['GET', '/v1/accounts', 'POST'],
      ['PROPFIND', '/v1/pets', 'GET, HEAD, POST'],
    ];
    for (const [method, url, allow] of cases) {
      const res = await as(t.app, owner, {
        method,
        url,
        payload: { name: 'Overwritten', categoryId: category.id },
      });
      expectError(res, 405, 'method_not_allowed', `${method} ${url}`);
      assert.equal(res.headers.allow, allow, `${method} ${url}: Allow`);
    }
    await catalogueUnchanged();
  });
});

describe('accounts: emails and passwords', () => {
  const signUp = (payload: string | Record<string, unknown>) =>
    t.app.inject({
      method: 'POST',
      url: '/v1/accounts',
      headers: JSON_TYPE,
      payload,
      remoteAddress: freshIp(),
    });

  it('an invalid email → 400 validation_failed, and no account', async () => {
    for (const email of [
      'plainaddress',
      '@example.com',
      'user@',
      'user@@example.com',
      'user @example.com',
      ' user@example.com',
      'user@exa mple.com',
      'user@example.com\n',
      'us\u0000er@example.com',
      '',
      `${'a'.repeat(250)}@example.com`,
    ]) {
      const res = await signUp({ email, password: PASSWORD });
      const body = expectError(res, 400, 'validation_failed', JSON.stringify(email));
      assert.ok(JSON.stringify(body).includes('email'), res.body);
    }
    for (const raw of ['1', 'null', 'true', '["a@example.com"]', '"a\\ud800@example.com"']) {
      const res = await signUp(withRaw({ password: PASSWORD }, 'email', raw));
      expectError(res, 400, 'validation_failed', raw);
    }
  });

  it('a password shorter than 12 characters → 400 validation_failed, and no account', async () => {
    for (const password of ['', 'a', 'elevenchars', ' '.repeat(11), '🐶'.repeat(11)]) {
      const email = `short-${randomUUID()}@example.com`;
      const res = await signUp({ email, password });
      const body = expectError(res, 400, 'validation_failed', JSON.stringify(password));
      assert.ok(JSON.stringify(body).includes('password'), res.body);
      assert.match(body.message, /12/);
      const signIn = await t.app.inject({
        method: 'GET',
        url: '/v1/keys',
        headers: { authorization: basic(email, password) },
      });
      assert.equal(signIn.statusCode, 401, `account created for ${email}`);
    }
    for (const raw of ['123456789012', 'null', '["correct horse battery"]']) {
      const res = await signUp(
        withRaw({ email: `t-${randomUUID()}@example.com` }, 'password', raw),
      );
      expectError(res, 400, 'validation_failed', raw);
    }
    // Exactly 12 is enough, and characters are counted, not UTF-16 units.
    const twelve = await signUp({
      email: `ok-${randomUUID()}@example.com`,
      password: '🐶'.repeat(12),
    });
    assert.equal(twelve.statusCode, 201, twelve.body);
  });

  it('a password that is not valid Unicode (lone surrogate) → 400 validation_failed', async () => {
    // It could never be sent back: HTTP Basic carries UTF-8, where a lone surrogate does not
    // exist. Accepting it means storing a different password than the one the user chose.
    const email = `surrogate-${randomUUID()}@example.com`;
    const res = await signUp(`{"email":"${email}","password":"correct horse\\ud800"}`);
    expectError(res, 400, 'validation_failed', 'lone surrogate in the password');
  });

  it('missing email or password → 400 validation_failed', async () => {
    for (const payload of [
      {},
      { email: `m-${randomUUID()}@example.com` },
      { password: PASSWORD },
    ]) {
      const res = await signUp(payload);
      expectError(res, 400, 'validation_failed', JSON.stringify(payload));
    }
  });

  it('a duplicate email, in any letter case → 409 email_taken; the first account is untouched', async () => {
    const local = `Dup-${randomUUID()}`;
    const first = await signUp({ email: `${local}@Example.COM`, password: PASSWORD });
    assert.equal(first.statusCode, 201, first.body);
    for (const email of [
      `${local}@Example.COM`,
      `${local.toLowerCase()}@example.com`,
      `${local.toUpperCase()}@EXAMPLE.COM`,
    ]) {
      const res = await signUp({ email, password: 'a different password entirely' });
      const body = expectError(res, 409, 'email_taken', email);
      assert.ok(!body.message.includes(PASSWORD));
    }
    // The refused sign-ups changed nothing: the first password still works, the others do not.
    const lower = `${local.toLowerCase()}@example.com`;
    const good = await t.app.inject({
      method: 'GET',
      url: '/v1/keys',
      headers: { authorization: basic(lower, PASSWORD) },
    });
    assert.equal(good.statusCode, 200, good.body);
    const other = await t.app.inject({
      method: 'GET',
      url: '/v1/keys',
      headers: { authorization: basic(lower, 'a different password entirely') },
    });
    assert.equal(other.statusCode, 401, other.body);
  });

  it('concurrent sign-ups with one email → exactly one 201, the rest 409, never a 500', async () => {
    const local = `race-${randomUUID()}`;
    const results = await Promise.all(
      ['', '', 'upper', '', 'upper', ''].map((variant) =>
        signUp({
          email: variant ? `${local.toUpperCase()}@EXAMPLE.com` : `${local}@example.com`,
          password: PASSWORD,
        }),
      ),
    );
    const statuses = results.map((r) => r.statusCode).sort();
    assert.deepEqual(statuses, [201, 409, 409, 409, 409, 409]);
    for (const res of results.filter((r) => r.statusCode === 409)) {
      expectError(res, 409, 'email_taken', 'race');
    }
  });
});

describe('valid but unusual Unicode is accepted and round-trips exactly', () => {
  let tenant: Tenant;
  let home: { id: number; name: string };

  before(async () => {
    tenant = await newTenant(t.app);
    home = await createCategory(t.app, tenant, 'Home');
  });

  const names: Array<[string, string]> = [
    ['emoji', '🐶🐱🦜'],
    ['a ZWJ family emoji', '👩\u200d👩\u200d👧\u200d👦'],
    ['a flag and a skin tone', '🇫🇷 👍🏽'],
    ['Arabic (RTL)', 'مرحبا بالعالم'],
    ['Hebrew with points (RTL)', 'שָׁלוֹם'],
    ['mixed LTR and RTL', 'Rex رکس Rex'],
    ['decomposed combining marks (NFD)', 'Zoe\u0308 Ren\u0303e\u0301'],
    ['precomposed (NFC)', 'Zoë Renée'],
    ['stacked combining marks', 'Z̴̡̪a̶l̷g̵o'],
    ['astral mathematical letters', '𝔘𝔫𝔦𝔠𝔬𝔡𝔢'],
    ['CJK and kana', '漢字かなカナ'],
    ['Devanagari', 'नमस्ते'],
    ['German sharp s and Turkish dotted I', 'Straße İstanbul'],
    ['a right-to-left mark inside', 'a\u200fb'],
    ['quotes, backslash and HTML', `"O'Brien" \\ <b>&amp;</b>`],
    ['200 astral characters (400 UTF-16 units)', '🐾'.repeat(200)],
  ];

  for (const [label, name] of names) {
    it(label, async () => {
      const cat = await as(t.app, tenant, {
        method: 'POST',
        url: '/v1/categories',
        payload: { name },
      });
      assert.equal(cat.statusCode, 201, cat.body);
      assert.equal(cat.json().name, name);
      const catRead = await as(t.app, tenant, {
        method: 'GET',
        url: `/v1/categories/${cat.json().id}`,
      });
      assert.equal(catRead.json().name, name);

      const created = await as(t.app, tenant, {
        method: 'POST',
        url: '/v1/pets',
        payload: { name, categoryId: home.id },
      });
      assert.equal(created.statusCode, 201, created.body);
      const id = created.json().id;
      assert.equal(created.json().name, name);
      const read = await as(t.app, tenant, { method: 'GET', url: `/v1/pets/${id}` });
      assert.equal(read.statusCode, 200);
      // Exactly: same code points, no normalisation, no trimming; same UTF-8 bytes on the wire.
      assert.equal(read.json().name, name);
      assert.ok(read.rawPayload.includes(Buffer.from(JSON.stringify(name).slice(1, -1))));

      // Renamed to the same text with its first character dropped and a "!" appended.
      const newName = `${[...name].slice(1).join('')}!`;
      const renamed = await as(t.app, tenant, {
        method: 'PATCH',
        url: `/v1/pets/${id}`,
        payload: { name: newName },
      });
      assert.equal(renamed.statusCode, 200, renamed.body);
      assert.equal(renamed.json().name, newName);
      const list = await as(t.app, tenant, { method: 'GET', url: '/v1/pets?limit=100' });
      const listed = list.json().find((p: { id: number }) => p.id === id);
      assert.equal(listed?.name, newName);
    });
  }

  it('201 astral characters are one too many', async () => {
    const res = await as(t.app, tenant, {
      method: 'POST',
      url: '/v1/categories',
      payload: { name: '🐾'.repeat(201) },
    });
    expectError(res, 400, 'validation_failed', '201 emoji');
  });
});

describe('afterwards', () => {
  it("the owner's catalogue is exactly as it was before all the malformed requests", async () => {
    await catalogueUnchanged();
    const read = await as(t.app, owner, { method: 'GET', url: `/v1/pets/${pet.id}` });
    assert.deepEqual(read.json(), pet);
  });
});
