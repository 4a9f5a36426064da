/**
 * The server's own timeouts, on a real port, with the real clock: a client that stops halfway
 * through its headers, and one that trickles its body (seconds of waiting: a process test).
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { newTenant, type Tenant } from '../helpers.js';
import { assertRawError, listening, RawClient } from '../raw-http.js';

describe('timeouts (headers 1 s, request 2 s)', () => {
  let base: string;
  let key: Tenant;

  before(async () => {
    const started = await listening({ HEADERS_TIMEOUT_SECONDS: '1', REQUEST_TIMEOUT_SECONDS: '2' });
    base = started.base;
    key = await newTenant(started.t.app);
  });

  /** A normal request on a connection of its own is answered. */
  async function othersAreServed(): Promise<void> {
    const res = await fetch(`${base}/v1/pets`, { headers: key.headers });
    assert.equal(res.status, 200);
    await res.arrayBuffer();
  }

  it('a client that stops halfway through its headers gets 408 request_timeout and is closed', async () => {
    const client = await RawClient.open(base);
    client.write('GET /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: appl');
    await othersAreServed();
    assert.ok(await client.closedWithin(10_000), 'still open after 10 s');
    assertRawError(client, 408, 'request_timeout', 'half the headers');
  });

  it('a client that trickles its body byte by byte is cut off by the request timeout', async () => {
    const client = await RawClient.open(base);
    client.write(
      'POST /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' +
        `Authorization: ${key.headers.authorization}\r\nContent-Length: 100\r\n\r\n`,
    );
    const trickle = setInterval(() => client.write(' '), 500);
    try {
      await othersAreServed();
      // The request timeout (2 s) plus the check interval (1 s), with room to spare.
      assert.ok(await client.closedWithin(8_000), 'still open after 8 s');
    } finally {
      clearInterval(trickle);
    }
    const answer = client.answer();
    // Cut off either with an answer or without one; an answer is a 408 in our shape.
    if (answer !== undefined) assertRawError(client, 408, 'request_timeout', 'a trickled body');
    await othersAreServed();
  });
});
