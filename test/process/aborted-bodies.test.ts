/**
 * Clients that send half a body and drop the connection, on a real port (issue 51, item 2). The
 * error a request's body stream raises then (`aborted`, ECONNRESET) carries the codes of a lost
 * database connection; it is the client's, never the store's: no outage is noted, logged or
 * counted, no batch of the request log is dropped, and another account's requests, answered
 * meanwhile, are each in its log (docs/decisions/0066-client-socket-errors.md).
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import {
  as,
  captureLog,
  createCategory,
  freshIp,
  newTenant,
  startApp,
  type Tenant,
  type TestApp,
} from '../helpers.js';

/** Every raw connection opened here, destroyed in `after` whatever a test did with it. */
const sockets = new Set<Socket>();

/** What an aborted request sends: its request line and headers, and the whole body it
 * promises (only half of which is sent). */
interface Aborted {
  path: string;
  headers: Record<string, string>;
  body: string;
}

/**
 * Sends `request`'s headers, a Content-Length for the whole body and half of it, waits a
 * moment (so that the server is reading the body), then drops the connection: `reset` with a
 * TCP RST, as a client killed mid-upload, otherwise closed as a client that gave up.
 */
async function sendHalfThenDrop(
  port: number,
  request: Aborted,
  reset: boolean,
  waitMs = 30,
): Promise<void> {
  const socket = connect(port, '127.0.0.1');
  sockets.add(socket);
  socket.on('error', () => {});
  await once(socket, 'connect');
  const headers = Object.entries({
    host: '127.0.0.1',
    'content-length': String(Buffer.byteLength(request.body)),
    ...request.headers,
  })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.write(
    `POST ${request.path} HTTP/1.1\r\n${headers}\r\n${request.body.slice(0, request.body.length / 2)}`,
  );
  await delay(waitMs);
  const closed = once(socket, 'close');
  if (reset) socket.resetAndDestroy();
  else socket.destroy();
  await closed;
  sockets.delete(socket);
}

/** The value of a metric's series, summed over its labels (0 when it has none yet). */
async function metricTotal(t: TestApp, name: string): Promise<number> {
  const text = (await t.app.inject({ url: '/metrics' })).body;
  let total = 0;
  for (const line of text.split('\n')) {
    const match = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`).exec(line);
    if (match) total += Number(match[1]);
  }
  return total;
}

describe('request bodies cut off by their clients, on a real port', () => {
  const log = captureLog();
  let t: TestApp;
  let port: number;
  let attacker: Tenant;
  let other: Tenant;

  before(async () => {
    // TRUST_PROXY: each aborted request without a key comes from an address of its own (its
    // X-Forwarded-For), so none is refused by the per-address limit before its body is read.
    t = await startApp({ logStream: log.stream, env: { LOG_LEVEL: 'info', TRUST_PROXY: 'true' } });
    attacker = await newTenant(t.app);
    other = await newTenant(t.app);
    const base = await t.app.listen({ host: '127.0.0.1', port: 0 });
    port = Number(new URL(base).port);
  });

  after(async () => {
    for (const socket of sockets) socket.destroy();
    await t.close();
  });

  it("100 aborted bodies mark no outage, drop no log entry, and leave another account's log whole", async () => {
    const category = await createCategory(t.app, other, 'Busy');
    const aborted = (i: number): Aborted => {
      const json = { 'content-type': 'application/json' };
      switch (i % 3) {
        case 0:
          return {
            path: '/v1/accounts',
            headers: { ...json, 'x-forwarded-for': freshIp() },
            body: JSON.stringify({ email: `half-${i}@example.com`, password: 'a long password' }),
          };
        case 1:
          return {
            path: '/portal/sign-in',
            headers: {
              'content-type': 'application/x-www-form-urlencoded',
              'x-forwarded-for': freshIp(),
            },
            body: `email=half-${i}%40example.com&password=a+long+password&_csrf=${'x'.repeat(40)}`,
          };
        default:
          return {
            path: '/v1/pets',
            headers: { ...json, ...attacker.headers, 'x-request-id': `aborted-${i}` },
            body: JSON.stringify({ name: `Half ${i}`, categoryId: 1 }),
          };
      }
    };

    // 100 aborts, ten at a time; the other account's ordinary requests, one after another,
    // until they are done.
    let next = 0;
    const aborting = Promise.all(
      Array.from({ length: 10 }, async () => {
        for (let i = next++; i < 100; i = next++)
          // A key's requests wait longer: its key is read (from the store, on PostgreSQL)
          // before the body is, and they are the ones whose cut-off body this test reads back.
          await sendHalfThenDrop(port, aborted(i), i % 2 === 0, i % 3 === 2 ? 150 : 30);
      }),
    );
    let abortsDone = false;
    void aborting.finally(() => {
      abortsDone = true;
    });
    const base = `http://127.0.0.1:${port}`;
    const ids: string[] = [];
    for (let i = 0; !abortsDone || ids.length < 30; i++) {
      const res =
        i % 3 === 1
          ? await fetch(`${base}/v1/pets`, {
              method: 'POST',
              headers: { ...other.headers, 'content-type': 'application/json' },
              body: JSON.stringify({ name: `Whole ${i}`, categoryId: category.id }),
            })
          : await fetch(`${base}/v1/${i % 3 === 0 ? 'pets' : 'categories'}`, {
              headers: other.headers,
            });
      const text = await res.text();
      assert.ok(res.status === 200 || res.status === 201, `request ${i}: ${res.status} ${text}`);
      ids.push(String(res.headers.get('x-request-id')));
    }
    await aborting;

    // No outage: none noted, none counted, none logged.
    assert.equal(t.app.ctx.outages.isDown('database'), false);
    assert.equal(await metricTotal(t, 'dependency_outages_total'), 0, 'outages counted');
    const loud = log.lines().filter((line) => Number(line.level) >= 40);
    assert.deepEqual(loud, [], 'logged above info');
    assert.doesNotMatch(log.text(), /unreachable|reachable again/);

    // No entry of the request log dropped, and every one of the other account's requests in it.
    await t.app.requestLog.flush();
    assert.equal(await metricTotal(t, 'request_log_dropped_total'), 0, 'log entries dropped');
    const missing: string[] = [];
    for (const id of ids) {
      const found = await as(t.app, other, { url: `/v1/requests/${id}` });
      if (found.statusCode !== 200) missing.push(`${id}: ${found.statusCode}`);
    }
    assert.deepEqual(missing, [], `of ${ids.length} requests`);

    // The aborted requests of a known caller are the client's, answered (to nobody) 408, and
    // say so in its log; never a 503 of the store.
    const cutOff: string[] = [];
    for (let i = 2; i < 100; i += 3) {
      const found = await as(t.app, attacker, { url: `/v1/requests/aborted-${i}` });
      if (found.statusCode !== 200) continue; // dropped before its request line was read
      const entry = found.json();
      assert.equal(entry.status, 408, JSON.stringify(entry));
      assert.equal(entry.errorCode, 'request_timeout', JSON.stringify(entry));
      if (/before the whole body arrived/.test(entry.errorBody?.message)) cutOff.push(entry.id);
    }
    // At least one was cut off while its body was being read, the case this test is about
    // (the others left before the server began to read theirs).
    assert.ok(cutOff.length > 0, 'no request was cut off while its body was read');
  });
});
