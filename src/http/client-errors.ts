import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { preParsingHookHandler } from 'fastify';
import { ApiError, errorBody, excerpt } from '../errors.js';

/** How long a connection refused by the parser is read from (and what it sends discarded)
 * after the answer, so that a client still sending reads the answer instead of a reset. */
const LINGER_MS = 2_000;

/** The request line and headers together, at most (Node's `maxHeaderSize`; nginx allows 32 KB
 * by default too). Past it Node's parser refuses the request. */
export const MAX_HEADER_BYTES = 32 * 1024;
/** The request target (path and query), at most: past it, 414. */
export const MAX_URL_BYTES = 8 * 1024;

export function uriTooLong(): ApiError {
  return new ApiError(
    'uri_too_long',
    `The request target is too long (${MAX_URL_BYTES / 1024} KB at most); shorten the query.`,
  );
}

const CLIENT_LEFT = 'The client closed the connection before the body was read; nothing was done.';

const BODY_CUT_OFF = 'The connection closed before the whole body arrived; nothing was done.';

/** Marks the errors a request's own body stream raised: its client's socket failed. */
const FROM_CLIENT_SOCKET = Symbol("raised by the request's own connection");

/** One listener for every request's body stream, not a closure made for each. */
function markClientSocketError(err: Error): void {
  if (Object.isExtensible(err)) (err as { [FROM_CLIENT_SOCKET]?: true })[FROM_CLIENT_SOCKET] = true;
}

/** Whether an error came from the request's own body stream (reset, aborted or timed out): the
 * client's, never the store's (docs/decisions/0066-client-socket-errors.md). */
export function clientSocketError(err: unknown): boolean {
  return (
    typeof err === 'object' &&
    err !== null &&
    (err as { [FROM_CLIENT_SOCKET]?: true })[FROM_CLIENT_SOCKET] === true
  );
}

/**
 * What a request whose connection broke while its body was read is answered: to nobody, as a
 * rule (the socket is gone), but the answer is its entry in the request log.
 */
export function bodyCutOff(): ApiError {
  return new ApiError('request_timeout', BODY_CUT_OFF);
}

/**
 * A request whose client left while it waited (to be counted, its key or its session read) has
 * a body that can no longer be read: a destroyed stream emits neither 'end' nor 'error', so
 * Fastify's body parser would wait for ever, and the request would never be answered, holding
 * its memory and making the shutdown wait out its deadline. Such a request is answered at once
 * instead (408, to nobody; its entry in the request log says why), and nothing is done. An
 * app-wide preParsing hook, so that every route and every 404 has it, and the only one: no
 * hook waits between it and the parser. GET and HEAD requests, whose bodies are never read,
 * go on to be answered into the void.
 *
 * A body still readable is handed on with a listener that marks what its stream raises as the
 * client's (`clientSocketError`), answered as such (`bodyCutOff`), never as the store's (0066).
 */
export const bodyStillReadable: preParsingHookHandler = (request, _reply, payload, done) => {
  if (request.method === 'GET' || request.method === 'HEAD') {
    done(null, payload);
  } else if (payload.destroyed) {
    done(new ApiError('request_timeout', CLIENT_LEFT));
  } else {
    payload.on('error', markClientSocketError);
    done(null, payload);
  }
};

interface ParserError extends Error {
  code?: string;
  /** llhttp's own words for what it refused ("Invalid header value char"). */
  reason?: unknown;
  /** The bytes being parsed when the parser gave up (a Buffer). */
  rawPacket?: unknown;
}

/** What the parser refused, as the error the client is told. */
export function clientErrorOf(err: ParserError): ApiError {
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return new ApiError(
      'request_timeout',
      'The request did not arrive in time; send its headers, then its body, without pausing.',
    );
  }
  if (err.code === 'HPE_HEADER_OVERFLOW') {
    // Past MAX_HEADER_BYTES of request line and headers together. Lines up to that size are
    // parsed and judged by the app (uriTooLong); here, only when the bytes being parsed begin
    // with the request line and it does not end in them is the line known to be at fault.
    const raw = err.rawPacket;
    const packet = Buffer.isBuffer(raw) ? raw.subarray(0, MAX_HEADER_BYTES).toString('latin1') : '';
    const lineEnd = packet.indexOf('\n');
    if (/^[A-Z]+ /.test(packet) && (lineEnd === -1 || lineEnd > MAX_URL_BYTES)) {
      return uriTooLong();
    }
    return new ApiError(
      'headers_too_large',
      `The request headers are too large (${MAX_HEADER_BYTES / 1024} KB at most, with the request line).`,
    );
  }
  const reason = typeof err.reason === 'string' ? `: ${excerpt(err.reason)}` : '';
  return new ApiError('bad_request', `The request is not valid HTTP/1.1${reason}.`);
}

/**
 * Fastify's `clientErrorHandler`: what Node's HTTP parser refuses, or a request cut off by the
 * server's timeouts, answered in our Error shape (Fastify's own default answers in its own).
 * No request exists yet, so no caller is known and no rate limit applies. The socket is
 * answered only when no answer has begun on it, then read from a little longer before it is
 * closed (a lingering close, as nginx does), so the client reads the answer.
 */
export function clientErrorHandler(err: ParserError, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  // Node calls this again for what arrives after the first refusal: it is already answered.
  if (socket.writableEnded) return;
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (!socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const error = clientErrorOf(err);
  const body = JSON.stringify(errorBody(error.code, error.message));
  socket.end(
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status]}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Request-Id: ${randomUUID()}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  );
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
  socket.once('end', () => socket.destroy());
}
