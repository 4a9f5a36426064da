import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import { type Bindings, type Logger, pino, stdSerializers } from 'pino';
import { logIds } from './ops/tracing.js';

export type Log = Logger;

/** A request or reply as one log field: what an operator reads, never the headers. */
const serializers = {
  req: (request: FastifyRequest) => ({
    method: request.method,
    url: request.url,
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  }),
  res: (reply: FastifyReply) => ({ statusCode: reply.statusCode }),
  err: stdSerializers.err,
};

/**
 * The service's one logger: JSON lines on stdout (or `stream`, which tests read), written
 * synchronously. A line logged is in the kernel's hands before the next statement runs: the
 * default sink's "message sent" line before the row says `sent` (so a SIGKILL never leaves a
 * sent message without its delivery), and the last words before any crash. It costs a write(2)
 * per line, and nothing at the levels where no request writes one.
 */
export function createLog(
  level: string,
  stream?: { write(line: string): void },
  traced = false,
): Log {
  const options = {
    level,
    serializers,
    // With traces on, each line written in a span names it.
    ...(traced && { mixin: () => logIds() }),
    // Credentials never reach the log, whatever a serializer or a plugin adds.
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', 'res.headers["set-cookie"]'],
      censor: '[redacted]',
    },
  };
  return pino(options, stream ?? pino.destination({ dest: 1, sync: true }));
}

type Write = (...args: unknown[]) => void;

/**
 * A request's logger (`request.log`, `reply.log`) above the info level: the service's logger
 * with the request id bound, made when the first line is written. Fastify's own logger would
 * make pino's child, and watch the response's `finish` and `error` events to log its end, for
 * every request whether or not a line is written (docs/decisions/0038-logging.md); above
 * info, nearly no request writes one. Disabled levels stay no-ops.
 */
class RequestLog {
  private made: Logger | undefined;

  constructor(
    private readonly log: Log,
    private readonly bindings: Bindings,
  ) {}

  get level(): string {
    return this.log.level;
  }

  trace(...args: unknown[]): void {
    if (this.log.isLevelEnabled('trace')) (this.bound().trace as Write)(...args);
  }
  debug(...args: unknown[]): void {
    if (this.log.isLevelEnabled('debug')) (this.bound().debug as Write)(...args);
  }
  info(...args: unknown[]): void {
    if (this.log.isLevelEnabled('info')) (this.bound().info as Write)(...args);
  }
  warn(...args: unknown[]): void {
    if (this.log.isLevelEnabled('warn')) (this.bound().warn as Write)(...args);
  }
  error(...args: unknown[]): void {
    if (this.log.isLevelEnabled('error')) (this.bound().error as Write)(...args);
  }
  fatal(...args: unknown[]): void {
    if (this.log.isLevelEnabled('fatal')) (this.bound().fatal as Write)(...args);
  }
  silent(): void {}

  child(bindings: Bindings, options?: object): Logger {
    return this.bound().child(bindings, options);
  }

  private bound(): Logger {
    this.made ??= this.log.child(this.bindings);
    return this.made;
  }
}

/** Fastify's `childLoggerFactory`: each request's logger, as above. */
export function requestLogger(log: Log) {
  return (_parent: FastifyBaseLogger, bindings: Bindings): FastifyBaseLogger =>
    new RequestLog(log, bindings) as unknown as FastifyBaseLogger;
}

/**
 * The one line a request writes at info, when it is answered: method, route pattern (never
 * the raw URL, which may carry anything), status, duration, request id and the account that
 * called, if any. Fastify's own pair of lines is off (`disableRequestLogging`).
 */
export function logRequest(
  request: FastifyRequest,
  reply: FastifyReply,
  done: (err?: Error) => void,
): void {
  const route = request.routeOptions.url ?? 'unmatched';
  request.log.info(
    {
      method: request.method,
      route,
      status: reply.statusCode,
      ms: Math.round(reply.elapsedTime * 10) / 10,
      ...(request.caller && { account: request.caller.account.id }),
      ...(request.traced && logIds(request.traced.span)),
    },
    `${request.method} ${route} ${reply.statusCode}`,
  );
  done();
}

/** At debug, each request as it arrives, with its URL (a request that never ends shows here). */
export function logArrival(
  request: FastifyRequest,
  _reply: FastifyReply,
  done: (err?: Error) => void,
): void {
  request.log.debug({ req: request }, 'request received');
  done();
}
