/**
 * The request log (docs/decisions/0013-request-log.md): what it keeps of each request, what it
 * redacts, its filters and pages, tenancy, its retention, that it keeps up with a burst and
 * never holds a request up, and the hourly counts behind `GET /v1/requests/stats`.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { type KyselyPlugin, sql } from 'kysely';
import {
  BODY_MAX_BYTES,
  getRequestEntry,
  keptBody,
  keptErrorBody,
  listRequestPage,
  REDACTED,
} from '../src/request-log/domain.js';
import {
  deleteAccountLogOverCap,
  entriesText,
  ID_BUCKETS,
  idBucket,
  insertRequestLog,
  OFFSET_DIGITS,
} from '../src/request-log/repository.js';
import {
  SEGMENT_MAX_BYTES,
  SEGMENT_MAX_ENTRIES,
  SegmentWriter,
  segmentEntries,
} from '../src/request-log/segments.js';
import {
  type AnsweredRequest,
  BATCH_SIZE,
  idempotencyKeyHash,
  rowsOf,
} from '../src/request-log/writer.js';
import { type Database, openDatabase, type ReadDb } from '../src/store/database.js';
import type { NewRequestLogSegment } from '../src/store/tables.js';
import {
  as,
  basic,
  captureLog,
  dialects,
  emptyDatabase,
  errorCode,
  freshIp,
  holdWriter,
  newTenant,
  nextLinkUrl,
  pathOf,
  planAccount,
  startApp,
  stillClock,
  type Tenant,
  type TestApp,
  until,
} from './helpers.js';

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
/** What `rowsOf` keeps of an Idempotency-Key by default. */
const keyHash = idempotencyKeyHash('rows');

/**
 * A segment's `ids` of these request ids, in order, written the simple way (the format is
 * src/request-log/repository.ts's): the ids in ID_BUCKETS parts by `idBucket`, each ` a b c `
 * or empty, behind a header of where each part ends.
 */
function idsText(ids: readonly string[]): string {
  const parts = Array.from({ length: ID_BUCKETS }, () => '');
  for (const id of ids) {
    const bucket = idBucket(id);
    parts[bucket] = `${parts[bucket] || ' '}${id} `;
  }
  let end = 0;
  const header = parts.map((part) => {
    end += part.length;
    return String(end).padStart(OFFSET_DIGITS, '0');
  });
  return header.join('') + parts.join('');
}

/** A segment as written, read back: its entries with their bodies. */
const readBack = (segment: NewRequestLogSegment | undefined) =>
  segment ? segmentEntries(segment.entries, segment.first_at, segment.bodies) : [];

interface Entry {
  id: string;
  method: string;
  route: string | null;
  path: string;
  status: number;
  durationMs: number;
  keyId: string | null;
  errorCode: string | null;
  idempotencyKey: string | null;
  replayed: boolean;
  clientAddress: string;
  createdAt: string;
  requestBody?: string | null;
  requestBodyTruncated?: boolean;
  errorBody?: unknown;
  count: number;
}

/** Every entry of the tenant's log a list answers, through every page. */
async function listed(app: FastifyInstance, tenant: Tenant, query = ''): Promise<Entry[]> {
  const entries: Entry[] = [];
  let url: string | undefined = `/v1/requests?limit=100${query}`;
  while (url) {
    const res = await as(app, tenant, { url });
    assert.equal(res.statusCode, 200, res.body);
    entries.push(...(res.json() as Entry[]));
    const next = nextLinkUrl(res);
    url = next && pathOf(next);
  }
  return entries;
}

/** The account's segments in the store. */
function segmentRows(database: Database, accountId: string) {
  return database.reader
    .selectFrom('request_log_segments')
    .select(['ids', 'entries', 'bodies', 'first_at'])
    .where('account_id', '=', accountId)
    .execute();
}

/** The account's entries in the store (of one path), counted there. */
async function stored(database: Database, accountId: string, path?: string): Promise<number> {
  const segments = await segmentRows(database, accountId);
  const entries = segments.flatMap((row) => segmentEntries(row.entries, row.first_at, row.bodies));
  return entries.filter((entry) => path === undefined || entry.path === path).length;
}

/** A metric's value in the app's /metrics, 0 when absent. */
async function metric(app: FastifyInstance, series: string): Promise<number> {
  const text = (await app.inject({ url: '/metrics' })).body;
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

const requestId = (res: LightMyRequestResponse) => String(res.headers['x-request-id']);

/** A tenant's request as the log captures it: a GET of /v1/pets answered 200, unless told. */
function answered(
  tenant: Tenant,
  fields: Pick<AnsweredRequest, 'id' | 'at'> & Partial<AnsweredRequest>,
): AnsweredRequest {
  return {
    accountId: tenant.accountId,
    keyId: tenant.keyId,
    method: 'GET',
    route: '/v1/pets',
    url: '/v1/pets',
    status: 200,
    durationMs: 1,
    ip: '127.0.0.1',
    idempotencyKey: undefined,
    replayed: false,
    body: null,
    errorBody: null,
    ...fields,
  };
}

describe('request log: redaction', () => {
  it('redacts every field named like a secret, at any depth and in any case', () => {
    const body = {
      name: 'Rex',
      password: 'p',
      Secret: { nested: 'whole object' },
      items: [{ apiKey: 'k', keep: 1 }, [{ refreshToken: 't', KEY: null }]],
      monkey: 'any name containing key',
      note: 'kept',
    };
    const kept = keptBody(body);
    assert.deepEqual(JSON.parse(kept?.text ?? ''), {
      name: 'Rex',
      password: REDACTED,
      Secret: REDACTED,
      items: [{ apiKey: REDACTED, keep: 1 }, [{ refreshToken: REDACTED, KEY: REDACTED }]],
      monkey: REDACTED,
      note: 'kept',
    });
    assert.equal(kept?.truncated, false);
    assert.deepEqual(keptBody(['a', 1, null, true]), {
      text: '["a",1,null,true]',
      truncated: false,
    });
    assert.equal(keptBody(undefined), null);
  });

  it('redacts secrets by their shape wherever they stand, and fields named like credentials', () => {
    const key = 'as_test_4bQ9zX1pL0mN8vC2';
    const signed = `${'A'.repeat(43)}.${'b'.repeat(43)}`;
    const kept = keptBody({
      note: `my key is ${key}, and whsec_9Zx8Yw7V`,
      page: 'as_pk_test_Q2w3E4r5T6y7U8i9',
      url: 'https://bob:hunter2@hooks.example.com/in',
      header: 'Bearer opaque-token-1',
      cookieJar: `as_session=${signed}; theme=dark`,
      raw: signed,
      [`as_live_${'k'.repeat(20)}`]: 'named by a key',
      Authorization: 'Basic Ym9i',
      auth: 'x',
      credentials: { user: 'bob' },
      pass: 'p',
      pwd: 'p',
      cookie: 'c',
      session: 's',
      bearer: key,
      keep: 'visible https://example.com/ok',
    });
    const text = kept?.text ?? '';
    for (const secret of [
      key,
      'whsec_9Zx8Yw7V',
      'hunter2',
      'bob:',
      'opaque-token-1',
      signed,
      'Ym9i',
      'as_live_',
      'Q2w3E4r5T6y7U8i9',
    ]) {
      assert.ok(!text.includes(secret), `${secret} in ${text}`);
    }
    const body = JSON.parse(text);
    assert.equal(body.keep, 'visible https://example.com/ok');
    assert.equal(body.url, `https://${REDACTED}@hooks.example.com/in`);
    for (const name of [
      'Authorization',
      'auth',
      'credentials',
      'pass',
      'pwd',
      'cookie',
      'session',
      'bearer',
    ]) {
      assert.equal(body[name], REDACTED, name);
    }
    // An Error quoting what was sent, and a path holding a key: redacted too.
    const error = keptErrorBody(
      JSON.stringify({ code: 'x', message: `Bad value ${key}.`, status: 400 }),
    );
    assert.ok(!error.includes(key), error);
    assert.equal(JSON.parse(error).message, `Bad value ${REDACTED}.`);
    const tenant = { accountId: 'acct', keyId: 'key' } as Tenant;
    const { segments } = rowsOf(
      [answered(tenant, { id: 'p', at: 0, url: `/v1/pets/${key}?x=1` })],
      'w',
    );
    assert.equal(readBack(segments[0])[0]?.path, `/v1/pets/${REDACTED}`);
  });

  it('cuts at 4 KB on a character boundary, after redacting, and says so', () => {
    const secret = 's'.repeat(10_000);
    const body = { token: secret, name: '🐕é'.repeat(2_000) };
    const kept = keptBody(body);
    assert.ok(kept);
    assert.equal(kept.truncated, true);
    const bytes = Buffer.byteLength(kept.text);
    assert.ok(bytes <= BODY_MAX_BYTES && bytes > BODY_MAX_BYTES - 4, `${bytes} bytes`);
    assert.ok(kept.text.startsWith(`{"token":"${REDACTED}","name":"🐕é🐕`), kept.text.slice(0, 40));
    assert.ok(JSON.stringify(body).startsWith(kept.text.replace(`"${REDACTED}"`, `"${secret}"`)));
    assert.ok(!kept.text.includes('\uFFFD'), 'no character is cut in two');
    assert.ok(!kept.text.includes('sss'));
    // A body of any size costs no more than its first 4 KB: a long string is cut first.
    assert.equal(keptBody('x'.repeat(1_000_000))?.text.length, BODY_MAX_BYTES);
  });
});

describe('request log: rows', () => {
  it('keeps the entry of a client that left before its answer, without its address', () => {
    const { segments, hours } = rowsOf(
      [
        {
          accountId: 'acct',
          keyId: null,
          id: 'gone',
          method: 'POST',
          route: '/v1/pets/{petId}',
          url: '/v1/pets/7?x=1',
          status: 503,
          durationMs: 1.23456,
          at: Date.parse('2026-11-24T12:34:56.789Z'),
          ip: undefined,
          idempotencyKey: ['first', 'second'],
          replayed: false,
          body: null,
          errorBody: '{"code":"service_unavailable","message":"…","status":503}',
        },
      ],
      'w',
    );
    const entries = readBack(segments[0]);
    assert.deepEqual(
      [entries[0]?.client, entries[0]?.route, entries[0]?.path, entries[0]?.idempotencyKey],
      [null, '/v1/pets/{petId}', '/v1/pets/7', keyHash('acct', 'first')],
    );
    assert.equal(entries[0]?.errorCode, 'service_unavailable');
    assert.deepEqual(hours, [
      {
        account_id: 'acct',
        hour: '2026-11-24T12:00:00.000Z',
        writer: 'w',
        s2xx: 0,
        s4xx: 0,
        s5xx: 1,
        s429: 0,
      },
    ]);
  });
  it('reads back every field it writes, whatever its value', () => {
    const tenant = { accountId: 'acct', keyId: 'key' } as Tenant;
    const at = Date.parse('2026-11-24T12:00:00.000Z');
    const requests = [
      answered(tenant, { id: 'a', at, durationMs: 0 }),
      // Arrived 12.3 s before the first, slow: a negative offset, a long duration.
      answered(tenant, { id: 'b', at: at - 12_300, durationMs: 9_007_199.254 }),
      answered(tenant, {
        id: 'c',
        at: at + 1,
        keyId: null,
        method: 'DELETE',
        route: undefined,
        url: '/v1/pets/1/\\x',
        status: 503,
        ip: '2001:db8::1',
        idempotencyKey: 'é\u2028',
        replayed: true,
        body: { text: '{"a":"\t"}', truncated: true },
        errorBody: '{"code":"service_unavailable"}',
      }),
      // As the first again, after an entry that differs in every repeated place.
      answered(tenant, { id: 'd', at: at + 2, durationMs: 0.0004 }),
      // A success of a trace: its trace after the places a success leaves out.
      answered(tenant, {
        id: 'e',
        at: at + 3,
        durationMs: 1,
        traceId: '0af7651916cd43dd8448eb211c80319c',
      }),
    ];
    const { segments } = rowsOf(requests, 'w');
    const read = readBack(segments[0]);
    const plain = {
      keyId: 'key',
      method: 'GET',
      route: '/v1/pets',
      path: '/v1/pets',
      status: 200,
      durationMs: 0,
      errorCode: null,
      idempotencyKey: null,
      replayed: false,
      client: '127.0.0.0/24',
      requestBody: null,
      requestBodyTruncated: false,
      errorBody: null,
      count: 1,
      traceId: null,
    };
    assert.deepEqual(read, [
      { ...plain, id: 'a', at },
      { ...plain, id: 'b', at: at - 12_300, durationMs: 9_007_199.254 },
      {
        id: 'c',
        keyId: null,
        method: 'DELETE',
        route: null,
        path: '/v1/pets/1/\\x',
        status: 503,
        durationMs: 1,
        errorCode: 'service_unavailable',
        idempotencyKey: keyHash('acct', 'é\u2028'),
        replayed: true,
        client: '2001:db8:0:0::/64',
        at: at + 1,
        requestBody: '{"a":"\t"}',
        requestBodyTruncated: true,
        errorBody: '{"code":"service_unavailable"}',
        count: 1,
        traceId: null,
      },
      { ...plain, id: 'd', at: at + 2 },
      { ...plain, id: 'e', at: at + 3, durationMs: 1, traceId: '0af7651916cd43dd8448eb211c80319c' },
    ]);
  });

  it('holds what an entry writes, not a bound on it: an error with 4 KB bodies, ~8 KB', () => {
    const at = Date.parse('2026-11-24T12:00:00.000Z');
    const writer = new SegmentWriter('acct');
    writer.add({
      id: 'bad',
      keyId: 'key',
      method: 'POST',
      route: '/v1/pets',
      path: '/v1/pets',
      status: 400,
      durationMs: 1,
      errorCode: 'validation_failed',
      idempotencyKey: null,
      replayed: false,
      client: null,
      at,
      requestBody: 'x'.repeat(BODY_MAX_BYTES),
      requestBodyTruncated: true,
      errorBody: `{"message":"${'y'.repeat(BODY_MAX_BYTES - 20)}"}`,
      count: 1,
      traceId: null,
    });
    // Many accounts failing at once each hold this until their batch is written: its bodies'
    // text, at most twice what was written, and the smallest buffers (2 KB) of its entry and id.
    assert.ok(writer.bytesHeld <= 2 * 8_400 + 2 * 2048, String(writer.bytesHeld));
    const [segment] = writer.segments();
    assert.equal(readBack(segment)[0]?.id, 'bad');
  });

  it('splits an account into segments by count and by size, each read back whole, in order', () => {
    const tenant = { accountId: 'acct', keyId: 'key' } as Tenant;
    const at = Date.parse('2026-11-24T12:00:00.000Z');
    const successes = Array.from({ length: SEGMENT_MAX_ENTRIES + 5 }, (_, i) =>
      answered(tenant, { id: `ok-${i}`, at: at + i }),
    );
    // Errors with bodies of 4 KB (each ~8 KB of segment text, its JSON escaped twice).
    const body = { name: '"'.repeat(BODY_MAX_BYTES) };
    const errors = Array.from({ length: 100 }, (_, i) =>
      answered(tenant, {
        id: `bad-${i}`,
        method: 'POST',
        status: 400,
        at: at + i,
        body: keptBody(body),
        errorBody: JSON.stringify({ code: 'validation_failed', message: 'x'.repeat(2000) }),
      }),
    );
    // Answered last, arrived first: before its segment's first entry. Its path and key hold
    // what JSON escapes: a control character, a lone surrogate, a pair, quotes, a backslash.
    const slow = answered(tenant, {
      id: 'slow',
      at: at - 5_000.4,
      durationMs: 5_000.4,
      url: '/v1/pets/\u0001\ud800\u{1f415}"\\?x=1',
      idempotencyKey: '\udc00"key"\\\u001f',
    });
    const { segments } = rowsOf([...successes, ...errors, slow], 'w');
    const sizes = segments.map((segment) => segment.size);
    assert.equal(sizes[0], SEGMENT_MAX_ENTRIES);
    // What an entry shares with the one before it is written once a segment, spelt out by its
    // first entry (the store finds a segment by the text of a key id or a path).
    const times = (text: string, part: string) => text.split(part).length - 1;
    const texts = segments.map((segment) => entriesText(segment.entries));
    assert.deepEqual(
      texts.map((text) => times(text, '"key"')),
      segments.map(() => 1),
    );
    assert.equal(times(texts[0] ?? '', '"/v1/pets"'), 2, 'its route and path');
    assert.ok(sizes.length >= 3, String(sizes));
    segments.forEach((segment, i) => {
      const text = texts[i] ?? '';
      assert.ok(Buffer.byteLength(text) <= SEGMENT_MAX_BYTES, String(segment.size));
      assert.ok((segment.bodies?.length ?? 0) <= SEGMENT_MAX_BYTES, String(segment.size));
      assert.equal(segment.errors, text.match(/\["bad-/g)?.length ?? 0);
      // Its ids in their parts, as a migration writes them too: what a lookup by id searches.
      assert.equal(entriesText(segment.ids), idsText(readBack(segment).map((entry) => entry.id)));
    });
    const read = segments.flatMap(readBack);
    assert.deepEqual(
      read.map((entry) => entry.id),
      [...successes, ...errors, slow].map((request) => request.id),
    );
    assert.deepEqual(
      [read.at(-1)?.at, read.at(-1)?.path, read.at(-1)?.idempotencyKey],
      [
        Math.round(slow.at),
        '/v1/pets/\u0001\ud800\u{1f415}"\\',
        keyHash('acct', String(slow.idempotencyKey)),
      ],
    );
    assert.equal(read.at(-2)?.requestBody, keptBody(body)?.text);
    assert.ok(read.at(-2)?.requestBodyTruncated);
  });
});

describe('request log', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp();
  });
  after(() => t.close());

  it('shows a request by its X-Request-Id within a second: status, error code, the body redacted', async () => {
    const tenant = await newTenant(t.app);
    const id = `mine-${randomUUID()}`;
    const secrets = ['hunter2-pw', 'zz-secret', 'as_test_leaked', 'tok-leaked'];
    const res = await as(t.app, tenant, {
      method: 'POST',
      url: '/v1/pets',
      headers: { 'x-request-id': id, 'idempotency-key': 'key-1' },
      payload: {
        name: '',
        categoryId: 1,
        password: secrets[0],
        Secret: { deep: secrets[1] },
        items: [{ apiKey: secrets[2] }, { refreshToken: secrets[3], keep: 'visible' }],
      },
    });
    assert.equal(res.statusCode, 400);
    assert.equal(requestId(res), id);
    let entry: Entry | undefined;
    await until(
      async () => {
        const found = await as(t.app, tenant, { url: `/v1/requests/${id}` });
        if (found.statusCode === 200) entry = found.json();
        return entry !== undefined;
      },
      'the entry',
      1_000,
    );
    assert.ok(entry);
    const { durationMs, createdAt, requestBody, ...rest } = entry;
    assert.deepEqual(rest, {
      id,
      method: 'POST',
      route: '/v1/pets',
      path: '/v1/pets',
      status: 400,
      keyId: tenant.keyId,
      errorCode: 'validation_failed',
      idempotencyKey: rest.idempotencyKey,
      replayed: false,
      clientAddress: '127.0.0.0/24',
      requestBodyTruncated: false,
      errorBody: res.json(),
      count: 1,
      traceId: null,
    });
    // The Idempotency-Key as a keyed hash: what the log shows cannot replay the request.
    assert.match(String(rest.idempotencyKey), /^ikh_[\w-]{22}$/);
    assert.ok(durationMs >= 0 && durationMs < 60_000, String(durationMs));
    // Timed from the arrival the request path stamps (0 without it: arrived when answered).
    assert.ok(durationMs > 0, 'timed from its arrival');
    assert.ok(Math.abs(Date.parse(createdAt) - Date.now()) < MINUTE, createdAt);
    assert.deepEqual(JSON.parse(requestBody ?? ''), {
      name: '',
      categoryId: 1,
      password: REDACTED,
      Secret: REDACTED,
      items: [{ apiKey: REDACTED }, { refreshToken: REDACTED, keep: 'visible' }],
    });
    // Not in the store either, anywhere in the account's log.
    const texts = (await segmentRows(t.database, tenant.accountId))
      .flatMap((row) => [row.ids, row.entries, row.bodies ?? ''].map(entriesText))
      .join('\n');
    assert.ok(texts.includes(id));
    for (const secret of [...secrets, 'key-1']) assert.ok(!texts.includes(secret), secret);
  });

  it('logs every answer of a known account, successes without bodies; nothing without one', async () => {
    const tenant = await newTenant(t.app);
    const sent = [
      await as(t.app, tenant, { url: '/v1/pets' }),
      await as(t.app, tenant, { url: '/v1/no-such-operation?x=1' }),
      await as(t.app, tenant, { method: 'PUT', url: '/v1/pets' }),
      await t.app.inject({
        url: '/v1/keys',
        headers: { authorization: basic(tenant.email, tenant.password) },
      }),
      await as(t.app, tenant, { method: 'POST', url: '/messages', payload: { message: 'Hi' } }),
    ];
    // No known account: an unknown key, a wrong password, a sign-up.
    await t.app.inject({
      url: '/v1/pets',
      headers: { authorization: 'Bearer as_test_unknown' },
      remoteAddress: freshIp(),
    });
    await t.app.inject({
      url: '/v1/keys',
      headers: { authorization: basic(tenant.email, 'not the password') },
      remoteAddress: freshIp(),
    });
    await t.app.requestLog.flush();
    const entries = await listed(t.app, tenant);
    const byId = new Map(entries.map((entry) => [entry.id, entry]));
    const shown = sent.map((res) => {
      const entry = byId.get(requestId(res));
      assert.ok(entry, `${requestId(res)} is listed`);
      assert.equal(entry.status, res.statusCode);
      return [entry.method, entry.route, entry.path, entry.status, entry.errorCode, entry.keyId];
    });
    assert.deepEqual(shown, [
      ['GET', '/v1/pets', '/v1/pets', 200, null, tenant.keyId],
      ['GET', null, '/v1/no-such-operation', 404, 'route_not_found', tenant.keyId],
      ['PUT', null, '/v1/pets', 405, 'method_not_allowed', tenant.keyId],
      ['GET', '/v1/keys', '/v1/keys', 200, null, null],
      ['POST', '/messages', '/messages', 202, null, tenant.keyId],
    ]);
    // Newest first: the key made by newTenant, then these, in the order sent.
    assert.deepEqual(
      entries.map((entry) => entry.id),
      [...sent.map(requestId).reverse(), entries.at(-1)?.id],
    );
    assert.equal(entries.at(-1)?.path, '/v1/keys');
    const success = await as(t.app, tenant, { url: `/v1/requests/${requestId(sent[0] as never)}` });
    assert.equal(success.json().requestBody, null);
    assert.equal(success.json().errorBody, null);
    assert.equal(success.json().requestBodyTruncated, false);
  });

  it('filters by status (exact or class), key, method and path, in pages, newest first', async () => {
    const tenant = await newTenant(t.app);
    const second = await t.app.inject({
      method: 'POST',
      url: '/v1/keys',
      headers: { authorization: basic(tenant.email, tenant.password) },
      payload: { name: 'second' },
    });
    const other = { ...tenant, keyId: second.json().id as string };
    other.headers = { authorization: `Bearer ${second.json().key}` };
    await as(t.app, tenant, { url: '/v1/pets' });
    await as(t.app, tenant, { url: '/v1/pets/999999' });
    await as(t.app, tenant, { method: 'POST', url: '/v1/categories', payload: {} });
    await as(t.app, tenant, { method: 'DELETE', url: '/v1/pets/999999' });
    await as(t.app, other, { url: '/v1/categories' });
    await as(t.app, other, { method: 'POST', url: '/v1/pets', payload: { name: 'x' } });
    await t.app.requestLog.flush();

    const all = await listed(t.app, tenant);
    assert.equal(all.length, 8); // two keys made, six calls
    const cases: Array<[string, (entry: Entry) => boolean, number]> = [
      ['&status=404', (e) => e.status === 404, 2],
      ['&status=4xx', (e) => e.status >= 400 && e.status < 500, 4],
      ['&status=2xx', (e) => e.status >= 200 && e.status < 300, 4],
      ['&status=5xx', () => false, 0],
      [`&keyId=${other.keyId}`, (e) => e.keyId === other.keyId, 2],
      ['&method=DELETE', (e) => e.method === 'DELETE', 1],
      ['&path=/v1/pets/999999', (e) => e.path === '/v1/pets/999999', 2],
      ['&status=404&method=GET', (e) => e.status === 404 && e.method === 'GET', 1],
    ];
    for (const [query, keep, count] of cases) {
      const filtered = await listed(t.app, tenant, query);
      assert.deepEqual(filtered, all.filter(keep), query);
      assert.equal(filtered.length, count, query);
    }
    // Pages of one, newest first, and the filters kept in the next link.
    const first = await as(t.app, tenant, { url: '/v1/requests?limit=1&status=4xx' });
    const next = nextLinkUrl(first);
    assert.equal(next?.searchParams.get('status'), '4xx');
    const walked: Entry[] = [...first.json()];
    for (let url: URL | undefined = next; url; ) {
      const page = await as(t.app, tenant, { url: pathOf(url) });
      assert.equal(page.json().length, 1);
      walked.push(...page.json());
      url = nextLinkUrl(page);
    }
    assert.deepEqual(
      walked,
      all.filter((e) => e.status >= 400),
    );
    const times = all.map((e) => Date.parse(e.createdAt));
    assert.deepEqual(
      times,
      [...times].sort((a, b) => b - a),
    );
    for (const bad of ['?status=4x', '?status=600', '?method=BREW', '?path=', '?cursor=nope']) {
      const res = await as(t.app, tenant, { url: `/v1/requests${bad}` });
      assert.equal(res.statusCode, 400, bad);
      assert.ok(['validation_failed', 'invalid_cursor'].includes(errorCode(res)), bad);
    }
  });

  it('finds paths JSON escapes, across segments and pages, as they were sent', async () => {
    const tenant = await newTenant(t.app);
    await t.app.requestLog.flush();
    const paths = ['/v1/pets/"quoted"', '/v1/pets/back\\slash', '/v1/pets/€uro', '/v1/pets/\u2028'];
    const at = Date.now();
    // One segment a request, each written apart, as a quiet account's are.
    for (const [i, path] of [...paths, ...paths].entries()) {
      const { segments, hours } = rowsOf(
        [
          answered(tenant, {
            id: `escaped-${i}`,
            route: undefined,
            url: `${path}?q=1`,
            status: 404,
            at: at + i,
            idempotencyKey: `"${path}"`,
          }),
        ],
        'fixture',
      );
      await t.database.write((tx) => insertRequestLog(tx, segments, hours));
    }
    for (const [i, path] of paths.entries()) {
      const found = await listed(t.app, tenant, `&path=${encodeURIComponent(path)}`);
      assert.deepEqual(
        found.map((entry) => [entry.id, entry.path, entry.idempotencyKey]),
        [
          [`escaped-${i + paths.length}`, path, keyHash(tenant.accountId, `"${path}"`)],
          [`escaped-${i}`, path, keyHash(tenant.accountId, `"${path}"`)],
        ],
        path,
      );
    }
    const byId = await as(t.app, tenant, { url: '/v1/requests/escaped-1' });
    assert.equal(byId.json().path, paths[1]);
    // Pages of one, one segment each: the cursor goes on from segment to segment.
    const walked: string[] = [];
    for (let url: string | undefined = '/v1/requests?limit=1&status=404'; url; ) {
      const page = await as(t.app, tenant, { url });
      walked.push(...page.json().map((entry: Entry) => entry.id));
      const next = nextLinkUrl(page);
      url = next && pathOf(next);
    }
    assert.deepEqual(
      walked,
      Array.from({ length: 8 }, (_, i) => `escaped-${7 - i}`),
    );
  });

  it("answers 404 for another account's entry, whatever id a client chose", async () => {
    const [a, b] = [await newTenant(t.app), await newTenant(t.app)];
    const shared = `shared-${randomUUID()}`;
    await as(t.app, a, { url: '/v1/pets', headers: { 'x-request-id': shared } });
    await as(t.app, b, { url: '/v1/categories', headers: { 'x-request-id': shared } });
    const bOnly = requestId(await as(t.app, b, { url: '/v1/store/inventory' }));
    // The same id twice in one account: both kept, the newest read by id.
    await as(t.app, a, { url: '/v1/events', headers: { 'x-request-id': shared } });
    await t.app.requestLog.flush();

    const read = async (tenant: Tenant, id: string) =>
      as(t.app, tenant, { url: `/v1/requests/${encodeURIComponent(id)}` });
    assert.equal((await read(a, shared)).json().path, '/v1/events');
    assert.equal((await read(b, shared)).json().path, '/v1/categories');
    const refused = await read(a, bOnly);
    assert.equal(refused.statusCode, 404);
    assert.equal(errorCode(refused), 'not_found');
    assert.equal(errorCode(await read(a, 'never-made')), 'not_found');
    const aIds = (await listed(t.app, a)).map((e) => `${e.id} ${e.path}`);
    assert.ok(aIds.includes(`${shared} /v1/pets`) && aIds.includes(`${shared} /v1/events`));
    assert.ok(!aIds.some((line) => line.startsWith(bOnly) || line.endsWith('/v1/categories')));
  });

  it('logs no reading of the log, and counts none', async () => {
    const tenant = await newTenant(t.app);
    await as(t.app, tenant, { url: '/v1/pets' });
    await t.app.requestLog.flush();
    const before = await stored(t.database, tenant.accountId);
    const id = (await listed(t.app, tenant))[0]?.id;
    await as(t.app, tenant, { url: `/v1/requests/${id}` });
    await as(t.app, tenant, { url: '/v1/requests/no-such-entry' });
    await as(t.app, tenant, { url: '/v1/requests/stats' });
    await as(t.app, tenant, { url: '/v1/requests?status=oops' });
    await t.app.requestLog.flush();
    assert.equal(await stored(t.database, tenant.accountId), before);
    const stats = await as(t.app, tenant, { url: '/v1/requests/stats?period=24h' });
    assert.deepEqual(stats.json().totals, {
      status2xx: 2, // the key made by newTenant, and the GET
      status4xx: 0,
      status5xx: 0,
      status429: 0,
    });
  });

  it('counts each hour by 2xx, 4xx, 5xx and 429 as the entries are, 429 apart', async () => {
    const tenant = await newTenant(t.app, { plan: 'free' });
    // The Free plan's 60 a minute (the key's creation was one), then refusals.
    for (let i = 0; i < 62; i++) await as(t.app, tenant, { url: '/v1/pets' });
    await planAccount(t.app, tenant.accountId, 'enterprise', { perMinute: 1e6, perDay: 1e8 });
    await as(t.app, tenant, { url: '/v1/pets/999999' });
    await as(t.app, tenant, { method: 'POST', url: '/v1/categories', payload: {} });
    await t.app.requestLog.flush();

    const entries = await listed(t.app, tenant);
    // Refusals past a key's first of a minute are one entry, with their count.
    const count = (keep: (status: number) => boolean) =>
      entries.filter((e) => keep(e.status)).reduce((sum, e) => sum + e.count, 0);
    const expected = {
      status2xx: count((s) => s >= 200 && s < 300),
      status4xx: count((s) => s >= 400 && s < 500 && s !== 429),
      status5xx: count((s) => s >= 500),
      status429: count((s) => s === 429),
    };
    assert.deepEqual(expected, { status2xx: 60, status4xx: 2, status5xx: 0, status429: 3 });
    for (const [query, hours] of [
      ['', 168],
      ['?period=7d', 168],
      ['?period=24h', 24],
    ] as const) {
      const res = await as(t.app, tenant, { url: `/v1/requests/stats${query}` });
      assert.equal(res.statusCode, 200, res.body);
      const stats = res.json();
      assert.equal(stats.hours.length, hours);
      assert.equal(stats.period, query === '?period=24h' ? '24h' : '7d');
      assert.deepEqual(stats.totals, expected);
      const summed = { status2xx: 0, status4xx: 0, status5xx: 0, status429: 0 };
      for (const hour of stats.hours as Array<typeof summed & { hour: string }>) {
        for (const key of Object.keys(summed) as Array<keyof typeof summed>) {
          summed[key] += hour[key];
        }
      }
      assert.deepEqual(summed, expected);
      assert.equal(
        stats.to,
        new Date(Date.parse(stats.hours.at(-1).hour) + 3_600_000).toISOString(),
      );
      assert.equal(stats.from, stats.hours[0].hour);
    }
    const bad = await as(t.app, tenant, { url: '/v1/requests/stats?period=30d' });
    assert.equal(errorCode(bad), 'validation_failed');
  });

  it('writes a burst of 10,000 requests as it comes: at most one batch unwritten', async () => {
    const tenant = await newTenant(t.app);
    const total = 10_000;
    const started = Date.now();
    for (let sent = 0; sent < total; sent += 250) {
      const answers = await Promise.all(
        Array.from({ length: 250 }, () => as(t.app, tenant, { url: '/v1/pets' })),
      );
      assert.ok(answers.every((res) => res.statusCode === 200));
    }
    const burstMs = Date.now() - started;
    await until(
      async () => (await stored(t.database, tenant.accountId, '/v1/pets')) >= total - BATCH_SIZE,
      'all but one batch written',
      1_000,
    );
    await t.app.requestLog.flush();
    assert.equal(await stored(t.database, tenant.accountId, '/v1/pets'), total);
    assert.equal(await metric(t.app, 'request_log_dropped_total{reason="buffer_full"}'), 0);
    assert.equal(await metric(t.app, 'request_log_dropped_total{reason="write_failed"}'), 0);
    assert.ok(burstMs < 60_000, `the burst took ${burstMs} ms`);
  });

  it('writes batch after batch into the buffers of those written before, each read back whole', async () => {
    const tenant = await newTenant(t.app);
    await t.app.requestLog.flush();
    const at = Date.now();
    const sent: string[] = [];
    let made: number | undefined;
    // Each batch's text shorter than the one before: a segment that took more of a buffer used
    // before than its own bytes would read the last batch's tail. The first is large enough for
    // a statement of its own on PostgreSQL, sent as bytes: a character of two bytes in each
    // path reads back as one.
    for (const [batch, size] of [
      [0, 300],
      [1, 120],
      [2, 40],
    ] as const) {
      for (let i = 0; i < size; i++) {
        const id = `again-${batch}-${i}`;
        sent.push(id);
        const url = `/v1/pets/ü${'p'.repeat(size - i)}`;
        t.app.requestLog.add(answered(tenant, { id, at: at + sent.length, url }));
      }
      await t.app.requestLog.flush();
      made ??= t.app.requestLog.buffersMade;
    }
    // The later batches, smaller, took every buffer from those the first gave back.
    assert.equal(t.app.requestLog.buffersMade, made);
    const rows = await segmentRows(t.database, tenant.accountId);
    const entries = rows.flatMap((row) => segmentEntries(row.entries, row.first_at));
    const again = entries.filter((entry) => entry.id.startsWith('again-'));
    assert.deepEqual(again.map((entry) => entry.id).sort(), [...sent].sort());
    for (const entry of again) {
      const [, batch, i] = entry.id.split('-').map(Number);
      const size = [300, 120, 40][batch ?? 0] ?? 0;
      assert.equal(entry.path, `/v1/pets/ü${'p'.repeat(size - (i ?? 0))}`);
    }
  });

  it("stores a batch's segments in their order: a large one, then a small one of newer entries", async () => {
    // A batch holding an account's 2,005 entries makes two segments of it: 2,000 (well over
    // PostgreSQL's 8 KB for a statement of its own), then 5 (small: in one statement with other
    // accounts' small segments). The newer entries must be stored after the older ones: reads
    // and the cap both go by the order segments were stored in. (On SQLite every segment is a
    // statement of its own, in order; the test bites on PostgreSQL, with TEST_DATABASE_URL.)
    const tenant = await newTenant(t.app);
    const other = await newTenant(t.app);
    await t.app.requestLog.flush();
    const at = Date.now();
    const requests = Array.from({ length: SEGMENT_MAX_ENTRIES + 5 }, (_, i) =>
      answered(tenant, { id: `order-${i}`, at: at + i }),
    );
    for (const request of requests) t.app.requestLog.add(request);
    t.app.requestLog.add(answered(other, { id: 'other-0', at }));
    await t.app.requestLog.flush();
    const newestFirst = requests.map((request) => request.id).reverse();
    // (After them, the entries of the tenant's making.)
    assert.deepEqual(
      (await listed(t.app, tenant)).map((entry) => entry.id).slice(0, requests.length),
      newestFirst,
    );
    // Capped at its newest 5, the account keeps the small segment, not the large one.
    await t.database.write((tx) => deleteAccountLogOverCap(tx, tenant.accountId, 5));
    assert.deepEqual(
      (await listed(t.app, tenant)).map((entry) => entry.id),
      newestFirst.slice(0, 5),
    );
    assert.deepEqual((await listed(t.app, other)).map((entry) => entry.id).slice(0, 1), [
      'other-0',
    ]);
  });
});

describe('request log: a bounded buffer, a failing store, a closing app', () => {
  it('drops and counts entries past REQUEST_LOG_BUFFER while the store is held, never waiting', async () => {
    const t = await startApp({ env: { REQUEST_LOG_BUFFER: '10' } });
    // Let go whatever fails: the app's close waits for the held write.
    let release = () => {};
    try {
      const tenant = await newTenant(t.app);
      await t.app.requestLog.flush();
      const written = await metric(t.app, 'request_log_written_total');
      // The store's writer held: no batch can be written until it is let go.
      const hold = await holdWriter(t.database);
      release = hold.release;
      const held = hold.done;
      const answers = await Promise.all(
        Array.from({ length: 100 }, () => as(t.app, tenant, { url: '/v1/pets' })),
      );
      assert.ok(answers.every((res) => res.statusCode === 200));
      // At most one batch taken for its write, which waits for the writer (none, when an
      // earlier batch's write already waits): the rest are held, or dropped.
      assert.ok((await metric(t.app, 'request_log_buffered')) <= 10);
      const dropped = await metric(t.app, 'request_log_dropped_total{reason="buffer_full"}');
      assert.ok(dropped >= 80, `${dropped} dropped`);
      release();
      await held;
      await t.app.requestLog.flush();
      const kept = (await metric(t.app, 'request_log_written_total')) - written;
      assert.equal(kept + dropped, 100);
      assert.equal(await stored(t.database, tenant.accountId, '/v1/pets'), kept);
    } finally {
      release();
      await t.close();
    }
  });

  it("keeps a batch's buffers while it waits for the writer: the next batch is encoded elsewhere", async () => {
    const t = await startApp();
    // Let go whatever fails: the app's close waits for the held write.
    let release = () => {};
    try {
      const tenant = await newTenant(t.app);
      await t.app.requestLog.flush();
      const at = Date.now();
      const sendBatch = (batch: string) => {
        for (let i = 0; i < 300; i++) {
          const id = `${batch}-${i}`;
          t.app.requestLog.add(answered(tenant, { id, at: at + i, url: `/v1/pets/${id}` }));
        }
      };
      // The store's writer held: the first batch's write waits for it, its bytes in its buffers.
      const hold = await holdWriter(t.database);
      release = hold.release;
      const held = hold.done;
      sendBatch('first');
      // Taken for its write, which waits for the writer.
      await until(() => t.app.requestLog.buffered === 0, 'the first batch taken');
      // The same sizes again: had the first batch's buffers gone back to the pool, these would
      // be written over them before the first batch is. Encoded at the end of this turn.
      sendBatch('second');
      await new Promise((resolve) => setImmediate(resolve));
      release();
      await held;
      await t.app.requestLog.flush();
      const rows = await segmentRows(t.database, tenant.accountId);
      const entries = rows.flatMap((row) => segmentEntries(row.entries, row.first_at));
      const ours = entries.filter((entry) => /^(first|second)-/.test(entry.id));
      assert.equal(ours.length, 600);
      for (const entry of ours) assert.equal(entry.path, `/v1/pets/${entry.id}`);
    } finally {
      release();
      await t.close();
    }
  });

  it('drops a batch the store refuses, answers every request, and logs once until one is written', async () => {
    const log = captureLog();
    let refuse = false;
    const t = await startApp({
      env: { LOG_LEVEL: 'error' },
      logStream: log.stream,
      wrapDatabase: (database): Database => ({
        ...database,
        write: (work, options) =>
          refuse ? Promise.reject(new Error('the store refuses')) : database.write(work, options),
      }),
    });
    try {
      const tenant = await newTenant(t.app);
      await t.app.requestLog.flush();
      const failures = () =>
        log.lines().filter((line) => String(line.msg).startsWith('request log: a batch')).length;
      refuse = true;
      for (let i = 0; i < 3; i++) {
        assert.equal((await as(t.app, tenant, { url: '/v1/pets' })).statusCode, 200);
        await t.app.requestLog.flush();
      }
      assert.equal(await metric(t.app, 'request_log_dropped_total{reason="write_failed"}'), 3);
      assert.equal(failures(), 1);
      refuse = false;
      await as(t.app, tenant, { url: '/v1/pets' });
      await t.app.requestLog.flush();
      refuse = true;
      await as(t.app, tenant, { url: '/v1/pets' });
      await t.app.requestLog.flush();
      assert.equal(failures(), 2, 'logged again after a batch was written');
      refuse = false;
      assert.equal(await stored(t.database, tenant.accountId, '/v1/pets'), 1);
    } finally {
      await t.close();
    }
  });

  it('encodes at the end of the turn: an entry that cannot be encoded drops its batch, counted and logged once', async () => {
    const log = captureLog();
    const t = await startApp({
      ownStore: true,
      env: { LOG_LEVEL: 'error' },
      logStream: log.stream,
    });
    try {
      const tenant = await newTenant(t.app);
      await t.app.requestLog.flush();
      const at = Date.now();
      const broken = (id: string) => answered(tenant, { id, at, url: undefined as never });
      // Taken now, encoded in the next check phase. A broken entry takes the batch it went into
      // with it (what of the batch was written is not known): 'before' is lost too.
      t.app.requestLog.add(answered(tenant, { id: 'before', at }));
      t.app.requestLog.add(broken('broken-1'));
      t.app.requestLog.add(broken('broken-2'));
      t.app.requestLog.add(answered(tenant, { id: 'after', at: at + 1 }));
      assert.equal(t.app.requestLog.buffered, 4);
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(t.app.requestLog.buffered, 1, 'encoded in the check phase after the adds');
      await t.app.requestLog.flush();
      const ids = (await listed(t.app, tenant)).map((entry) => entry.id);
      assert.equal(ids[0], 'after');
      for (const lost of ['before', 'broken-1', 'broken-2']) assert.ok(!ids.includes(lost), lost);
      assert.equal(await metric(t.app, 'request_log_dropped_total{reason="write_failed"}'), 3);
      assert.equal(await metric(t.app, 'request_log_buffered'), 0);
      const logged = log
        .lines()
        .filter((line) =>
          String(line.msg).startsWith('request log: an entry could not be encoded'),
        );
      assert.equal(logged.length, 1, 'once, until a batch is written');
      // The process goes on: requests are answered, and logged.
      const res = await as(t.app, tenant, { url: '/v1/pets' });
      assert.equal(res.statusCode, 200);
      await t.app.requestLog.flush();
      assert.equal((await listed(t.app, tenant))[0]?.id, requestId(res));
    } finally {
      await t.close();
    }
  });

  it("prunes an account past its newest 10,000 as it writes, before housekeeping's turn", async () => {
    const t = await startApp({ ownStore: true });
    try {
      const tenant = await newTenant(t.app);
      await t.app.requestLog.flush();
      const at = Date.now();
      for (let i = 0; i < 25_000; i++) {
        t.app.requestLog.add(answered(tenant, { id: `flood-${i}`, status: 404, at: at + i }));
        if (i % 500 === 499) await t.app.requestLog.flush();
      }
      // Pruned at 10,000 and 20,000 written: the newest 10,000 and the 5,000 since are kept.
      assert.equal(await stored(t.database, tenant.accountId), 15_000);
      const shown = await as(t.app, tenant, { url: '/v1/requests?limit=1' });
      assert.equal(shown.json()[0].id, 'flood-24999');
    } finally {
      await t.close();
    }
  });

  it('writes what it holds when the app closes', async () => {
    const t = await startApp({ ownStore: true });
    try {
      const tenant = await newTenant(t.app);
      await Promise.all(Array.from({ length: 5 }, () => as(t.app, tenant, { url: '/v1/pets' })));
      assert.ok(t.app.requestLog.buffered > 0);
      await t.app.close();
      assert.equal(await stored(t.database, tenant.accountId, '/v1/pets'), 5);
    } finally {
      await t.close();
    }
  });
});

describe('request log: off (REQUEST_LOG=off)', () => {
  it('logs nothing, and its routes answer 404 saying why, after counting the call', async () => {
    const t = await startApp({ env: { REQUEST_LOG: 'off' }, ownStore: true });
    try {
      const tenant = await newTenant(t.app);
      const sent = await as(t.app, tenant, { url: '/v1/pets' });
      assert.equal(sent.statusCode, 200);
      assert.equal(t.app.requestLog.buffered, 0);
      await t.app.requestLog.flush();
      assert.equal(await stored(t.database, tenant.accountId), 0);
      for (const url of ['/v1/requests', '/v1/requests/stats', `/v1/requests/${requestId(sent)}`]) {
        const res = await as(t.app, tenant, { url });
        assert.equal(res.statusCode, 404, url);
        assert.equal(errorCode(res), 'not_found');
        assert.match(res.json().message, /keeps no request log.*REQUEST_LOG=off/);
        assert.ok(res.headers['x-ratelimit-remaining'], 'counted like any call');
      }
      const metrics = await t.app.inject({ url: '/metrics' });
      assert.equal(metrics.statusCode, 200);
      assert.match(metrics.body, /^request_log_written_total 0$/m);
    } finally {
      await t.close();
    }
  });
});

describe('request log: retention', () => {
  const clock = stillClock();
  let t: TestApp;
  before(async () => {
    t = await startApp({ clock, ownStore: true });
  });
  after(() => t.close());

  it('keeps entries and their counts 7 days, then housekeeping deletes them', async () => {
    const tenant = await newTenant(t.app);
    const id = requestId(await as(t.app, tenant, { url: '/v1/pets' }));
    await t.app.requestLog.flush();
    const read = () => as(t.app, tenant, { url: `/v1/requests/${id}` });
    clock.advance(7 * DAY - MINUTE);
    assert.equal((await read()).statusCode, 200, 'kept for 7 days');
    assert.equal((await listed(t.app, tenant)).length, 2);
    clock.advance(2 * MINUTE);
    assert.equal((await read()).statusCode, 404, 'no longer read after 7 days');
    assert.deepEqual(await listed(t.app, tenant), []);
    const deleted = await t.app.ctx.housekeeping.runOnce();
    assert.ok((deleted['request log segments'] ?? 0) >= 1, JSON.stringify(deleted));
    assert.ok((deleted['request counts'] ?? 0) >= 1, JSON.stringify(deleted));
    assert.equal(await stored(t.database, tenant.accountId), 0);
    const stats = await as(t.app, tenant, { url: '/v1/requests/stats' });
    assert.equal(stats.json().totals.status2xx, 0);
  });

  it("shows an account's newest 10,000, housekeeping deleting the rest", async () => {
    const tenant = await newTenant(t.app);
    const other = await newTenant(t.app);
    await t.app.requestLog.flush();
    // Written straight to the store, as the log's batches write them: 10,050 requests.
    const at = clock.now().getTime();
    const requests = Array.from({ length: 10_050 }, (_, i) =>
      answered(tenant, { id: `fixture-${i}`, at: at + i }),
    );
    // In segments of 50: the oldest 50, and the segment of the request that made its key, are
    // past the newest 10,000.
    for (let i = 0; i < requests.length; i += 50) {
      const { segments, hours } = rowsOf(requests.slice(i, i + 50), 'fixture');
      await t.database.write((tx) => insertRequestLog(tx, segments, hours));
    }
    // Reads show the newest 10,000 and walk no further, before anything is pruned.
    const shown = await listed(t.app, tenant);
    assert.equal(shown.length, 10_000);
    assert.deepEqual([shown[0]?.id, shown.at(-1)?.id], ['fixture-10049', 'fixture-50']);
    assert.equal((await as(t.app, tenant, { url: '/v1/requests/fixture-49' })).statusCode, 404);
    const deleted = await t.app.ctx.housekeeping.runOnce();
    assert.equal(deleted['request log segments past 10,000'], 2, JSON.stringify(deleted));
    assert.equal(await stored(t.database, tenant.accountId), 10_000);
    assert.equal(await stored(t.database, other.accountId), 1, "another account's kept");
    const newest = await as(t.app, tenant, { url: '/v1/requests?limit=1' });
    assert.equal(newest.json()[0].id, 'fixture-10049');
    assert.equal((await as(t.app, tenant, { url: '/v1/requests/fixture-50' })).statusCode, 200);
    assert.equal((await as(t.app, tenant, { url: '/v1/requests/fixture-49' })).statusCode, 404);
  });
});

describe('request log: reads bounded by what they show (decision 0065)', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp();
  });
  after(() => t.close());

  it("summarises a key's refusals: the first of a minute as it comes, the rest as one entry with their count", async () => {
    const tenant = await newTenant(t.app, { plan: 'free' });
    const refused: string[] = [];
    for (let i = 0; i < 90; i++) {
      const res = await as(t.app, tenant, { url: '/v1/pets' });
      if (res.statusCode === 429) refused.push(requestId(res));
    }
    assert.ok(refused.length >= 25, String(refused.length));
    await t.app.requestLog.flush();
    // Room to read the log (reading it is counted like any call).
    await planAccount(t.app, tenant.accountId, 'enterprise', { perMinute: 1e6, perDay: 1e8 });
    const entries = (await listed(t.app, tenant)).filter((entry) => entry.status === 429);
    // Newest first: the summary (written once its minute was over, here at the flush), then
    // the first refusal, logged as it came.
    assert.deepEqual(
      entries.map((entry) => [entry.id, entry.count]),
      [
        [refused[1], refused.length - 1],
        [refused[0], 1],
      ],
    );
    const first = await as(t.app, tenant, { url: `/v1/requests/${refused[0]}` });
    assert.equal(first.statusCode, 200);
    assert.equal(first.json().count, 1);
    const summary = await as(t.app, tenant, { url: `/v1/requests/${refused[1]}` });
    assert.equal(summary.json().count, refused.length - 1);
    const folded = await as(t.app, tenant, { url: `/v1/requests/${refused.at(-1)}` });
    assert.equal(folded.statusCode, 404, 'a refusal summarised is counted, not kept');
    // The hourly counts count every request.
    const stats = await as(t.app, tenant, { url: '/v1/requests/stats?period=24h' });
    assert.equal(stats.json().totals.status429, refused.length);
  });

  it('finds an entry by its id in the ids alone: no statement searches the entries or bodies', async () => {
    const tenant = await newTenant(t.app);
    await t.app.requestLog.flush();
    const at = Date.now();
    // An error with 4 KB bodies that hold the id looked for, and the entry itself.
    const { segments, hours } = rowsOf(
      [
        answered(tenant, {
          id: 'decoy',
          status: 400,
          at,
          body: keptBody({ note: 'sought-id '.repeat(400) }),
          errorBody: JSON.stringify({ code: 'validation_failed', message: 'sought-id' }),
        }),
        answered(tenant, { id: 'sought-id', status: 404, at: at + 1, errorBody: '{"code":"x"}' }),
      ],
      'fixture',
    );
    await t.database.write((tx) => insertRequestLog(tx, segments, hours));
    const statements: string[] = [];
    const executor = t.database.reader.getExecutor();
    const spy: KyselyPlugin = {
      transformQuery: ({ node, queryId }) => {
        statements.push(executor.compileQuery(node, queryId).sql);
        return node;
      },
      transformResult: async ({ result }) => result,
    };
    const reader = t.database.reader.withPlugin(spy) as unknown as ReadDb;
    const now = new Date(at + MINUTE);
    const found = await getRequestEntry(reader, tenant.accountId, now, 'sought-id');
    assert.ok(found.ok);
    assert.equal(found.value.errorBody, null, 'its own bodies, not the decoy’s');
    const missing = await getRequestEntry(reader, tenant.accountId, now, 'never-sent');
    assert.equal(missing.ok, false);
    // The searches over the account's segments: its ids alone (one part of them on SQLite).
    const searches = statements.filter(
      (text) => /instr|strpos/.test(text) && /account_id/.test(text),
    );
    assert.ok(searches.length >= 2, statements.join('\n'));
    for (const text of searches) {
      assert.match(text, /instr\(substr\(ids, |strpos\(ids, /, text);
      assert.doesNotMatch(text, /(instr|strpos)\("?(entries|bodies)/, text);
    }
    // The decoy's bodies still read back whole with its entry.
    const decoy = await as(t.app, tenant, { url: '/v1/requests/decoy' });
    assert.match(decoy.json().requestBody, /^\{"note":"sought-id/);
  });

  it('stops a walk after WALK_BYTES of text: the page says where to go on, and the pages hold every match', async () => {
    const tenant = await newTenant(t.app);
    await t.app.requestLog.flush();
    const at = Date.now();
    // 3,000 requests of 1 KB paths (3 MB of entries), only every 500th the path filtered for.
    const requests = Array.from({ length: 3_000 }, (_, i) =>
      answered(tenant, {
        id: `long-${i}`,
        url: i % 500 === 0 ? '/v1/pets/wanted' : `/v1/pets/${i}-${'x'.repeat(1_000)}`,
        status: 404,
        at: at + i,
      }),
    );
    for (let i = 0; i < requests.length; i += 250) {
      const { segments, hours } = rowsOf(requests.slice(i, i + 250), 'fixture');
      await t.database.write((tx) => insertRequestLog(tx, segments, hours));
    }
    const pages: Entry[][] = [];
    for (let url: string | undefined = '/v1/requests?limit=100&path=/v1/pets/wanted'; url; ) {
      const page = await as(t.app, tenant, { url });
      assert.equal(page.statusCode, 200, page.body);
      pages.push(page.json());
      const next = nextLinkUrl(page);
      url = next && pathOf(next);
    }
    assert.ok(pages.length >= 3, `walked in ${pages.length} pages`);
    assert.deepEqual(
      pages.flat().map((entry) => entry.id),
      [2500, 2000, 1500, 1000, 500, 0].map((i) => `long-${i}`),
    );
    // Unfiltered, the same: every entry once, in order, through pages cut by the budget.
    const all = await listed(t.app, tenant);
    assert.equal(all.filter((entry) => entry.id.startsWith('long-')).length, 3_000);
  });
});

for (const dialect of dialects) {
  describe(`request log: migration 0016 (${dialect})`, () => {
    let own: { url: string; drop: () => Promise<void> };
    let database: Database;
    before(async () => {
      own = await emptyDatabase(dialect);
      database = openDatabase(own.url, { poolSize: 2 });
    });
    after(async () => {
      await database.close();
      await own.drop();
    });

    it('finds the entries of segments written before it by id, with their bodies inline', async () => {
      await database.schema.migrateTo('0015_request_log_segments');
      const at = new Date(Date.now() - MINUTE);
      // As 0015's writer wrote them: bodies in each error's places 12 to 14.
      const entries = JSON.stringify([
        [
          'old-ok',
          'key_a',
          'GET',
          '/v1/pets',
          '/v1/pets',
          200,
          900,
          null,
          null,
          0,
          '127.0.0.0/24',
          0,
        ],
        [
          'old-bad',
          0,
          'POST',
          0,
          0,
          400,
          1200,
          'validation_failed',
          null,
          0,
          0,
          5,
          '{"a":1}',
          0,
          '{"code":"validation_failed","message":"m","status":400}',
        ],
      ]);
      await database.write(async (tx) => {
        await sql`insert into request_log_segments
            (account_id, size, errors, first_at, last_at, entries)
          values ('acct_old', 2, 1, ${at.toISOString()}, ${at.toISOString()}, ${entries})`.execute(
          tx,
        );
      });
      await database.schema.migrate();
      const now = new Date();
      const bad = await getRequestEntry(database.reader, 'acct_old', now, 'old-bad');
      assert.ok(bad.ok);
      assert.deepEqual(
        [bad.value.path, bad.value.requestBody, bad.value.errorBody?.code, bad.value.count],
        ['/v1/pets', '{"a":1}', 'validation_failed', 1],
      );
      const ok = await getRequestEntry(database.reader, 'acct_old', now, 'old-ok');
      assert.ok(ok.ok);
      assert.equal((await getRequestEntry(database.reader, 'acct_old', now, 'old')).ok, false);
      const page = await listRequestPage(database.reader, 'acct_old', now, { limit: 10 });
      assert.ok(page.ok);
      assert.deepEqual(
        page.value.items.map((entry) => entry.id),
        ['old-bad', 'old-ok'],
      );
    });
  });
}
