/**
 * Clients on a real port, raw (`node:net`) where they must break HTTP's rules: an app listening
 * on 127.0.0.1, a raw client that reads what it is sent, and checks of the Error shape. Shared
 * by test/hostile-http.test.ts and test/process/timeouts.test.ts.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { after } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { saysNextStep } from '../src/errors.js';
import { startApp, type TestApp } from './helpers.js';

/** Every raw connection opened here, destroyed in `after` whatever a test did with it. */
export const sockets = new Set<Socket>();
/** Every app started here, closed in `after`. */
const apps: TestApp[] = [];
after(async () => {
  for (const socket of sockets) socket.destroy();
  await Promise.all(apps.map((app) => app.close()));
});

/** An app from `startApp`, listening on a port of 127.0.0.1 only; returns its base URL. */
export async function listening(
  env: Record<string, string> = {},
): Promise<{ t: TestApp; base: string }> {
  const t = await startApp({ env });
  apps.push(t);
  const base = await t.app.listen({ host: '127.0.0.1', port: 0 });
  assert.match(base, /^http:\/\/127\.0\.0\.1:\d+$/);
  return { t, base };
}

/** An HTTP/1.1 answer as read from a raw socket. */
export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The whole body arrived (as many bytes as Content-Length said). */
  complete: boolean;
}

export function parseAnswer(bytes: Buffer): RawAnswer | undefined {
  const end = bytes.indexOf('\r\n\r\n');
  if (end === -1) return undefined;
  const [statusLine = '', ...lines] = bytes.subarray(0, end).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(statusLine)?.[1]);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const rest = bytes.subarray(end + 4);
  const length = Number(headers['content-length']);
  return {
    status,
    headers,
    body: rest.subarray(0, length).toString('utf8'),
    complete: Number.isInteger(length) && rest.length >= length,
  };
}

/** A raw connection that records what it receives, and how it ends. */
export class RawClient {
  private readonly chunks: Buffer[] = [];
  /** The socket's error, if any (a reset would lose an answer still unread). */
  error: Error | undefined;
  /** Resolves when the connection is closed, by either side. */
  readonly closed: Promise<void>;

  private constructor(readonly socket: Socket) {
    sockets.add(socket);
    socket.on('data', (chunk: Buffer) => this.chunks.push(chunk));
    socket.on('error', (err) => {
      this.error = err;
    });
    this.closed = once(socket, 'close').then(() => undefined);
  }

  /** A connection to `base`; `paused`, it reads nothing until `socket.resume()`. */
  static async open(base: string, { paused = false } = {}): Promise<RawClient> {
    const socket = connect({ host: '127.0.0.1', port: Number(new URL(base).port) });
    // Paused before the 'data' listener is added, which then leaves it paused.
    if (paused) socket.pause();
    await once(socket, 'connect');
    return new RawClient(socket);
  }

  get isClosed(): boolean {
    return this.socket.destroyed;
  }

  write(data: string | Buffer): void {
    if (this.socket.writable) this.socket.write(data);
  }

  /** Writes `data` and waits until it is handed to the system (or the write failed). */
  send(data: Buffer): Promise<void> {
    if (!this.socket.writable) return Promise.resolve();
    return new Promise((resolve) => this.socket.write(data, () => resolve()));
  }

  answer(): RawAnswer | undefined {
    return parseAnswer(Buffer.concat(this.chunks));
  }

  /** Waits for the connection to close; false if it is still open after `ms`. */
  async closedWithin(ms: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), ms);
    });
    const closed = await Promise.race([this.closed.then(() => true as const), timeout]);
    clearTimeout(timer);
    return closed;
  }
}

/**
 * Sends `request` on a new connection as a client that writes all of it before it reads
 * anything, in pieces a moment apart (so that some arrive after the server has answered), then
 * reads until the server closes. A server that closes while such a client is still sending
 * resets the connection, and the client loses the answer: it must read the rest first.
 */
export async function sendAllThenRead(
  base: string,
  request: string | Buffer,
  piece = 4 * 1024,
  pauseMs = 1,
): Promise<RawClient> {
  const client = await RawClient.open(base, { paused: true });
  const bytes = Buffer.from(request);
  for (let at = 0; at < bytes.length && client.socket.writable; at += piece) {
    await client.send(bytes.subarray(at, at + piece));
    if (pauseMs > 0) await delay(pauseMs);
  }
  if (client.socket.writable) client.socket.end();
  client.socket.resume();
  assert.ok(await client.closedWithin(8_000), 'the server did not close the connection');
  return client;
}

/** Asserts that a raw answer is a complete Error body of `status` and `code`, with a short
 * message that says what to do next, read without a reset; returns the message. */
export function assertRawError(
  client: RawClient,
  status: number,
  code: string,
  label: string,
): string {
  const answer = client.answer();
  assert.ok(answer, `${label}: no answer read`);
  assert.ok(answer.complete, `${label}: the body was cut off: ${answer.body}`);
  assert.equal(client.error, undefined, `${label}: ${client.error?.message}`);
  assert.equal(answer.status, status, `${label}: ${answer.status} ${answer.body}`);
  assert.match(answer.headers['content-type'] ?? '', /^application\/json/, label);
  const body = JSON.parse(answer.body) as { code: unknown; message: unknown; status: unknown };
  assert.deepEqual(Object.keys(body).sort(), ['code', 'message', 'status'], label);
  assert.equal(body.code, code, `${label}: ${answer.body}`);
  assert.equal(body.status, status, label);
  assert.equal(typeof body.message, 'string', label);
  const message = body.message as string;
  assert.ok(message.length < 300, `${label}: a message of ${message.length} characters`);
  assert.ok(saysNextStep(message), `${label}: no next step in ${message}`);
  return message;
}

/** Asserts a fetch answer is an Error body of `status` and `code`; returns the body. */
export async function assertError(
  res: Response,
  status: number,
  code: string,
  label: string,
): Promise<{ code: string; message: string; status: number }> {
  const text = await res.text();
  assert.equal(res.status, status, `${label}: ${res.status} ${text.slice(0, 300)}`);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/, label);
  const body = JSON.parse(text) as { code: string; message: string; status: number };
  assert.equal(body.code, code, `${label}: ${text.slice(0, 300)}`);
  assert.equal(body.status, status, label);
  assert.equal(typeof body.message, 'string', label);
  assert.ok(saysNextStep(body.message), `${label}: no next step in ${body.message}`);
  return body;
}

export const RATE_LIMIT_HEADERS = [
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
];
