import { isUtf8 } from 'node:buffer';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../config.js';
import { ApiError, RETRY_SOON } from '../errors.js';
import { bodyStillReadable, MAX_URL_BYTES, uriTooLong } from '../http/client-errors.js';
import { registerErrorHandling, sendError, toApiError } from '../http/error-handler.js';
import { everyAnswer } from '../http/security-headers.js';
import { validatorCompiler } from '../http/validation.js';
import { logArrival, logRequest } from '../log.js';
import { servedWhileStarting } from '../ops/lifecycle.js';
import type { Basics } from './basics.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** When it arrived (`performance.now()`), stamped while the request log is on, which reads
     * it; 0 for a request no onRequest hook ran for (Fastify answered it before). */
    arrivedAt: number;
  }
}

const NOT_UTF8 = 'The body is not valid UTF-8, which JSON must be (RFC 8259 §8.1).';

/**
 * How deep a body's arrays and objects may nest. No operation's body goes beyond 4; what reads
 * a body whole (the idempotency fingerprint, a log's redaction) recurses, and must not run out
 * of stack on one made to.
 */
export const MAX_JSON_DEPTH = 64;

const TOO_DEEP = `The body nests arrays or objects more than ${MAX_JSON_DEPTH} deep.`;

/** Whether the JSON text nests arrays or objects deeper than MAX_JSON_DEPTH: one pass over its
 * bytes, brackets inside strings not counted. */
function nestsTooDeep(bytes: Buffer): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i];
    if (inString) {
      if (byte === 0x5c)
        i++; // a backslash: the next byte is escaped
      else if (byte === 0x22) inString = false;
    } else if (byte === 0x22) {
      inString = true;
    } else if (byte === 0x5b || byte === 0x7b) {
      if (++depth > MAX_JSON_DEPTH) return true;
    } else if (byte === 0x5d || byte === 0x7d) {
      depth--;
    }
  }
  return false;
}

const STARTING =
  'The service is starting: its database or Redis does not answer yet; retry shortly.';

/** A DNS name or IPv4 address, or a bracketed IPv6 address, then an optional port. */
const VALID_HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;

/**
 * Fastify's `frameworkErrors`: errors it meets before a route is chosen (bad URL encoding…)
 * get our Error body too, and under the API the caller is counted first, as for a 404. No
 * onRequest hook runs for these: the request is counted in flight here, as the hook counts the
 * rest. What it uses is the app's (`request.server`), there once the app is ready.
 */
export function answerFrameworkError(config: Config) {
  const answerHeaders = everyAnswer(config);
  return (err: FastifyError, request: FastifyRequest, reply: FastifyReply): void => {
    reply.header('x-request-id', request.id);
    answerHeaders(reply);
    const { lifecycle, countCaller } = request.server;
    lifecycle.began(reply.raw);
    countCaller(request, reply, (refusal) => sendError(reply, toApiError(refusal ?? err)));
  };
}

/**
 * What every request meets: the body parser, the hooks that log, count and admit it, and the
 * error handler. It counts the requests in flight (`Lifecycle.began`), so it is the one that
 * waits for them when the app closes: its onClose runs before those of the plugins it depends
 * on, so what the requests use stays open until every request begun has been answered.
 */
export const requestsPlugin = fp<Basics>(
  async (app, { config, log }) => {
    const { lifecycle, metrics, countCaller } = app;
    const answerHeaders = everyAnswer(config);
    app.decorateRequest('caller', null);
    app.decorateRequest('rateLimit', null);
    app.decorateRequest('arrivedAt', 0);
    // Stamped here, in the hook every request meets, rather than in a hook of the log's own:
    // a hook more costs every request a dispatch.
    const stampArrival = config.requestLog.enabled;
    app.setValidatorCompiler(validatorCompiler);
    // Only JSON bodies are accepted; anything else is refused as an unsupported content type.
    // An empty JSON body (some clients send the header on every request) counts as no body.
    const parseJson = app.getDefaultJsonParser('error', 'error');
    app.removeContentTypeParser(['text/plain', 'application/json']);
    // JSON is UTF-8 (RFC 8259 §8.1): a body that is not is refused, not stored with U+FFFD.
    app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
      const bytes = body as Buffer;
      if (bytes.length === 0) return done(null, undefined);
      if (!isUtf8(bytes)) return done(new ApiError('invalid_json', NOT_UTF8), undefined);
      if (nestsTooDeep(bytes)) return done(new ApiError('invalid_json', TOO_DEEP), undefined);
      parseJson(request, bytes.toString('utf8'), done);
    });
    if (log.isLevelEnabled('info')) app.addHook('onResponse', logRequest);
    // At debug, a line as each request arrives too (a request that never ends shows there).
    if (log.isLevelEnabled('debug')) app.addHook('onRequest', logArrival);
    // By route pattern, never the raw URL, so clients cannot multiply the series. Not counted
    // at all when nobody can read them (METRICS=off).
    if (config.metrics.mode !== 'off') {
      app.addHook('onResponse', (request, reply, done) => {
        const route = request.routeOptions.url ?? 'unmatched';
        metrics.request(request.method, route, reply.statusCode, reply.elapsedTime / 1000);
        done();
      });
    }

    // Nearly every request names the same Host: the one last found valid is not checked again.
    let lastGoodHost = '';
    // The hook every request meets takes a callback, not a promise (each async hook costs a
    // promise and a microtask per request), and sets the answer's headers up front rather than
    // in an onSend hook: headers set on the reply stay on whatever it answers, errors included.
    app.addHook('onRequest', (request, reply, done) => {
      if (stampArrival) request.arrivedAt = performance.now();
      reply.header('x-request-id', request.id);
      answerHeaders(reply);
      lifecycle.began(reply.raw);
      // Node's parser takes a line up to the size of all headers: the target's own limit is ours.
      if (request.url.length > MAX_URL_BYTES) {
        done(uriTooLong());
        return;
      }
      if (lifecycle.starting && !servedWhileStarting(request.url)) {
        done(new ApiError('service_unavailable', STARTING, undefined, RETRY_SOON));
        return;
      }
      // While shutting down, each answer ends its connection, so keep-alive clients reconnect
      // to another instance instead of holding this one open.
      if (lifecycle.draining) reply.header('connection', 'close');
      // Links and Location headers are built on the Host in development: a Host that is not a
      // host name is refused before anything is done, not met as a broken URL after a write.
      const host = request.host;
      if (host && host !== lastGoodHost) {
        if (!VALID_HOST.test(host)) {
          done(
            new ApiError(
              'bad_request',
              "The Host header is not a valid host[:port]; send the server's name or address.",
            ),
          );
          return;
        }
        lastGoodHost = host;
      }
      // Each request goes on from the event loop's check phase: the requests read in one turn
      // are each taken this far, then answered back to back. Their answers leave together, so
      // a client is woken once for many, and the same code runs many times in a row
      // (docs/decisions/0037-request-path.md). A request no route matches is counted here,
      // before its body is read: whatever it is answered (404, 405, a body refused), the
      // answer carries the rate-limit headers.
      if (request.is404) setImmediate(() => countCaller(request, reply, done));
      else setImmediate(done);
    });
    // A request whose client left before its body was read is answered, not left waiting.
    app.addHook('preParsing', bodyStillReadable);
    registerErrorHandling(app);

    // Closing: /readyz turns 503 and answers end their connections while the listener closes
    // (Fastify, before any onClose); then the requests still being answered are answered,
    // those whose clients went away too, before the plugins this one depends on close
    // (docs/decisions/0051-start-and-stop.md, 0011-app-as-plugins.md).
    app.addHook('preClose', async () => {
      lifecycle.drain();
    });
    app.addHook('onClose', async () => {
      await lifecycle.answered();
      log.info('shutdown: requests answered, listener closed');
    });
  },
  { name: 'requests', dependencies: ['ops', 'guards', 'context'] },
);
