import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import type { Message } from '../src/messages/domain.js';
import type { MessageSink } from '../src/messages/sink.js';
import {
  as,
  errorCode,
  freshIp,
  newTenant,
  startApp,
  type Tenant,
  type TestApp,
} from './helpers.js';

/** Polls GET /messages/{id} until the status is final (or the time is up). */
async function settled(app: FastifyInstance, tenant: Tenant, id: string, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await as(app, tenant, { method: 'GET', url: `/messages/${id}` });
    const body = res.json();
    if (body.status === 'sent' || body.status === 'failed' || Date.now() > deadline) return body;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Counts deliveries per message id; fails the first `failures` deliveries of each. */
class CountingSink implements MessageSink {
  readonly deliveries = new Map<string, number>();
  constructor(private readonly failures = 0) {}
  async deliver(message: Message): Promise<void> {
    const n = (this.deliveries.get(message.id) ?? 0) + 1;
    this.deliveries.set(message.id, n);
    if (n <= this.failures) throw new Error(`sink refused attempt ${n}`);
  }
}

const send = (app: FastifyInstance, tenant: Tenant, payload: unknown, headers = {}) =>
  as(app, tenant, { method: 'POST', url: '/messages', payload: payload as object, headers });

describe('POST /messages and GET /messages/{id}', () => {
  let t: TestApp;
  let tenant: Tenant;
  const sink = new CountingSink();
  before(async () => {
    t = await startApp({ sink });
    tenant = await newTenant(t.app);
  });
  after(() => t.close());

  it('answers 202 with the queued record and Location, then the worker sends it once', async () => {
    const res = await send(t.app, tenant, { message: 'Hello, store!' });
    assert.equal(res.statusCode, 202);
    const body = res.json();
    assert.deepEqual(Object.keys(body).sort(), ['createdAt', 'id', 'message', 'status']);
    assert.match(body.id, /^msg_[0-9A-Za-z]{20}$/);
    assert.equal(body.message, 'Hello, store!');
    assert.equal(body.status, 'queued');
    assert.match(body.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.equal(res.headers.location, `http://localhost/messages/${body.id}`);
    assert.match(String(res.headers['x-ratelimit-remaining']), /^\d+$/);

    const record = await settled(t.app, tenant, body.id);
    assert.equal(record.status, 'sent');
    assert.equal(record.createdAt, body.createdAt);
    assert.ok(record.updatedAt >= record.createdAt);
    assert.equal(record.failureReason, undefined);
    assert.equal(sink.deliveries.get(body.id), 1);
  });

  it('answers at /v1/messages too, as a generated client calls it, documented once', async () => {
    const res = await as(t.app, tenant, {
      method: 'POST',
      url: '/v1/messages',
      payload: { message: 'From a generated client' },
    });
    assert.equal(res.statusCode, 202, res.body);
    // The record's canonical address, where the document places it.
    assert.equal(res.headers.location, `http://localhost/messages/${res.json().id}`);
    const read = await as(t.app, tenant, { url: `/v1/messages/${res.json().id}` });
    assert.equal(read.statusCode, 200);
    assert.equal(read.json().message, 'From a generated client');
    // Behind the same key scopes as /messages.
    const missing = await t.app.inject({ method: 'POST', url: '/v1/messages', payload: {} });
    assert.equal(missing.statusCode, 401);
    const { paths } = (await t.app.inject({ url: '/v1/openapi.json' })).json();
    assert.deepEqual(
      Object.keys(paths).filter((path) => path.includes('messages')),
      ['/messages', '/messages/{messageId}'],
    );
  });

  it('accepts exactly 4,096 characters and keeps the text as sent', async () => {
    const text = `${'é'.repeat(4094)}🐕`; // 4,095 code points, 4,096 UTF-16 units
    const res = await send(t.app, tenant, { message: text });
    assert.equal(res.statusCode, 202, res.body);
    assert.equal(res.json().message, text);
    const max = await send(t.app, tenant, { message: 'x'.repeat(4096) });
    assert.equal(max.statusCode, 202);
  });

  it('refuses bad bodies with 400 and the Error shape, storing nothing', async () => {
    const other = await newTenant(t.app);
    const cases: Array<[string, { payload?: string; headers?: Record<string, string> }, string]> = [
      [
        'invalid JSON',
        { payload: '{"message": ', headers: { 'content-type': 'application/json' } },
        'invalid_json',
      ],
      [
        'missing message',
        { payload: '{}', headers: { 'content-type': 'application/json' } },
        'validation_failed',
      ],
      [
        'non-string message',
        { payload: '{"message": 42}', headers: { 'content-type': 'application/json' } },
        'validation_failed',
      ],
      [
        'null message',
        { payload: '{"message": null}', headers: { 'content-type': 'application/json' } },
        'validation_failed',
      ],
      [
        'empty message',
        { payload: '{"message": ""}', headers: { 'content-type': 'application/json' } },
        'validation_failed',
      ],
      [
        '4,097 characters',
        {
          payload: JSON.stringify({ message: 'x'.repeat(4097) }),
          headers: { 'content-type': 'application/json' },
        },
        'validation_failed',
      ],
      [
        'extra field',
        {
          payload: '{"message": "hi", "to": "bob"}',
          headers: { 'content-type': 'application/json' },
        },
        'validation_failed',
      ],
      [
        'NUL byte',
        { payload: '{"message": "a\\u0000b"}', headers: { 'content-type': 'application/json' } },
        'validation_failed',
      ],
      [
        'an array',
        { payload: '["hi"]', headers: { 'content-type': 'application/json' } },
        'validation_failed',
      ],
      ['no body', { headers: {} }, 'validation_failed'],
      [
        'text/plain',
        { payload: 'hi', headers: { 'content-type': 'text/plain' } },
        'unsupported_content_type',
      ],
      [
        'form encoded',
        { payload: 'message=hi', headers: { 'content-type': 'application/x-www-form-urlencoded' } },
        'unsupported_content_type',
      ],
    ];
    for (const [name, request, code] of cases) {
      const res = await as(t.app, other, { method: 'POST', url: '/messages', ...request });
      assert.equal(res.statusCode, 400, `${name}: ${res.body}`);
      assert.equal(errorCode(res), code, name);
      assert.match(String(res.headers['x-ratelimit-limit']), /^\d+$/, name);
    }
    const missingType = await t.app.inject({
      method: 'POST',
      url: '/messages',
      headers: { authorization: other.headers.authorization },
      payload: Buffer.from('{"message":"hi"}'),
    });
    assert.equal(missingType.statusCode, 400, missingType.body);
    assert.equal(errorCode(missingType), 'unsupported_content_type');
    const rows = await t.database.reader
      .selectFrom('messages')
      .select('id')
      .where('account_id', '=', other.accountId)
      .execute();
    assert.deepEqual(rows, []);
  });

  it('answers 401 to a missing key, a bad key and any header not of the Bearer form', async () => {
    const headers: Array<[string, Record<string, string>, string]> = [
      ['no header', {}, 'missing_credentials'],
      [
        'Basic',
        { authorization: `Basic ${Buffer.from('a@b.co:password1234').toString('base64')}` },
        'malformed_authorization',
      ],
      ['bare token', { authorization: tenant.key }, 'malformed_authorization'],
      ['Bearer alone', { authorization: 'Bearer' }, 'malformed_authorization'],
      ['Bearer and space', { authorization: 'Bearer ' }, 'malformed_authorization'],
      ['unknown key', { authorization: `Bearer as_test_${'Q'.repeat(40)}` }, 'invalid_api_key'],
    ];
    for (const [name, header, code] of headers) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/messages',
        headers: header,
        payload: { message: 'hi' },
        remoteAddress: freshIp(),
      });
      assert.equal(res.statusCode, 401, name);
      assert.equal(errorCode(res), code, name);
      assert.match(String(res.headers['www-authenticate']), /^Bearer/, name);
      assert.match(String(res.headers['x-ratelimit-limit']), /^\d+$/, name);
    }
    const lower = await send(
      t.app,
      tenant,
      { message: 'hi' },
      { authorization: `bearer ${tenant.key}` },
    );
    assert.equal(lower.statusCode, 202);
  });

  it('shows a record only to its own account', async () => {
    const res = await send(t.app, tenant, { message: 'private' });
    const intruder = await newTenant(t.app);
    const read = await as(t.app, intruder, { method: 'GET', url: `/messages/${res.json().id}` });
    assert.equal(read.statusCode, 404);
    assert.equal(errorCode(read), 'not_found');
    const unknown = await as(t.app, tenant, { method: 'GET', url: '/messages/msg_nope' });
    assert.equal(unknown.statusCode, 404);
  });
});

describe('message delivery retries', () => {
  it('retries with back-off and ends `sent` once the sink accepts', async () => {
    const sink = new CountingSink(2);
    const t = await startApp({
      sink,
      env: { MESSAGE_RETRY_BASE_MS: '20', MESSAGE_MAX_ATTEMPTS: '5' },
    });
    try {
      const tenant = await newTenant(t.app);
      const id = (await send(t.app, tenant, { message: 'third time lucky' })).json().id;
      const record = await settled(t.app, tenant, id);
      assert.equal(record.status, 'sent');
      assert.equal(sink.deliveries.get(id), 3);
    } finally {
      await t.close();
    }
  });

  it('ends `failed` with a reason after the last attempt', async () => {
    const sink = new CountingSink(Number.POSITIVE_INFINITY);
    const t = await startApp({
      sink,
      env: { MESSAGE_RETRY_BASE_MS: '10', MESSAGE_MAX_ATTEMPTS: '3' },
    });
    try {
      const tenant = await newTenant(t.app);
      const id = (await send(t.app, tenant, { message: 'never arrives' })).json().id;
      const record = await settled(t.app, tenant, id);
      assert.equal(record.status, 'failed');
      assert.match(record.failureReason, /after 3 attempts: sink refused attempt 3/);
      assert.equal(sink.deliveries.get(id), 3);
    } finally {
      await t.close();
    }
  });
});

describe('two workers over one store', () => {
  let a: TestApp;
  let b: TestApp;
  const sink = new CountingSink();
  before(async () => {
    const prefix = `test-${Math.random().toString(36).slice(2)}:`;
    a = await startApp({ sink, env: { REDIS_KEY_PREFIX: prefix } });
    b = await startApp({ sink, env: { REDIS_KEY_PREFIX: prefix, DATABASE_URL: a.databaseUrl } });
    await b.app.ready();
  });
  after(async () => {
    await b.close();
    await a.close();
  });

  it('process 500 messages exactly once between them', async () => {
    const tenant = await newTenant(a.app);
    const ids: string[] = [];
    for (let i = 0; i < 500; i++) {
      const res = await send(i % 2 ? a.app : b.app, tenant, { message: `message ${i}` });
      assert.equal(res.statusCode, 202);
      ids.push(res.json().id);
    }
    // Delivered first, then settled (committed with other settles): wait for both.
    const deadline = Date.now() + 60_000;
    const read = () =>
      a.database.reader
        .selectFrom('messages')
        .select(['id', 'status'])
        .where('account_id', '=', tenant.accountId)
        .execute();
    let rows = await read();
    while (
      (ids.some((id) => !sink.deliveries.has(id)) || rows.some((r) => r.status !== 'sent')) &&
      Date.now() < deadline
    ) {
      await new Promise((r) => setTimeout(r, 50));
      rows = await read();
    }
    assert.equal(rows.length, 500);
    assert.ok(
      rows.every((r) => r.status === 'sent'),
      JSON.stringify(rows.filter((r) => r.status !== 'sent').slice(0, 3)),
    );
    assert.deepEqual(
      ids.map((id) => sink.deliveries.get(id)),
      ids.map(() => 1),
    );
  });
});

describe('DELETE /messages/{id}', () => {
  /** Holds each delivery until `open()`. */
  class GatedSink implements MessageSink {
    private release: () => void = () => {};
    private readonly gate = new Promise<void>((resolve) => {
      this.release = resolve;
    });
    open(): void {
      this.release();
    }
    deliver(): Promise<void> {
      return this.gate;
    }
  }

  it('removes a settled message, refuses one in flight with 409 message_pending, and records the removal', async () => {
    const sink = new GatedSink();
    const t = await startApp({ sink });
    try {
      const tenant = await newTenant(t.app);
      const id = (await send(t.app, tenant, { message: 'to remove' })).json().id as string;
      const remove = () => as(t.app, tenant, { method: 'DELETE', url: `/messages/${id}` });
      const held = await remove();
      assert.equal(held.statusCode, 409);
      assert.equal(errorCode(held), 'message_pending');
      assert.match(held.json().message, /remove it once it settles/);
      const intruder = await newTenant(t.app);
      sink.open();
      assert.equal((await settled(t.app, tenant, id)).status, 'sent');
      const foreign = await as(t.app, intruder, { method: 'DELETE', url: `/messages/${id}` });
      assert.equal(foreign.statusCode, 404, "another account's message is not found");

      const removed = await remove();
      assert.equal(removed.statusCode, 204);
      const read = await as(t.app, tenant, { method: 'GET', url: `/messages/${id}` });
      assert.equal(read.statusCode, 404);
      assert.equal((await remove()).statusCode, 404);
      const events = (await as(t.app, tenant, { method: 'GET', url: '/v1/events' })).json();
      const deleted = events.find((e: { type: string }) => e.type === 'message.deleted');
      assert.equal(deleted?.data.id, id);
      assert.equal(deleted?.data.status, 'sent');
    } finally {
      await t.close();
    }
  });
});
