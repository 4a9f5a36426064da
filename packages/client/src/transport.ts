/**
 * How every request goes out: through the rate-limit gate, with an `Idempotency-Key` on every
 * POST (fresh per call, the same on that call's retries), retried with exponential back-off and
 * jitter when the service asks to wait (429, 503, or 409 for a key whose first request is
 * still running) or, for requests that are safe to repeat, when no answer came. Modelled on
 * stripe-node's RequestSender; openapi-fetch calls `send` as its `fetch`.
 */
import { AnimalStoreError, ConnectionError, RateLimitError } from './errors.js';
import { LimitedFor, type RateLimitGate, retryAfterSeconds } from './rate-limit.js';

export type Fetch = (request: Request) => Promise<Response>;

export interface TransportOptions {
  fetch: Fetch;
  gate: RateLimitGate;
  /** Retries after the first attempt. */
  maxRetries: number;
  /** Each attempt's time limit, in ms (0: none). */
  timeoutMs: number;
  /** The longest single wait the client accepts before it gives up (ms). */
  maxWaitMs: number;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  random: () => number;
  /** The `User-Agent` to send, where the runtime lets a script set it (not in browsers). */
  userAgent?: string | undefined;
}

/** Methods whose repetition has the effect of one request (RFC 9110 §9.2.2). */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'TRACE']);
const IDEMPOTENCY_KEY = 'idempotency-key';
const BASE_DELAY_MS = 500;
const MAX_DELAY_MS = 8_000;

export class Transport {
  constructor(private readonly options: TransportOptions) {}

  readonly send = async (given: Request): Promise<Response> => {
    const { gate, maxRetries } = this.options;
    const request = this.prepare(given);
    // Another attempt is safe when the request cannot act twice: an idempotent method, or a
    // POST whose key makes the service answer a repeat with the first answer.
    const repeatable = IDEMPOTENT.has(request.method) || request.headers.has(IDEMPOTENCY_KEY);
    for (let attempt = 0; ; attempt++) {
      try {
        await gate.enter(given.signal);
      } catch (error) {
        if (error instanceof LimitedFor) throw this.limited(error);
        throw stopped(given.signal, error);
      }
      let response: Response;
      try {
        response = await this.attempt(request);
      } catch (error) {
        gate.leave(undefined, undefined);
        if (given.signal.aborted) throw stopped(given.signal, error);
        if (!repeatable || attempt >= maxRetries) {
          throw error instanceof AnimalStoreError
            ? error
            : new ConnectionError(
                'connection_failed',
                `${request.method} ${request.url}: no answer (${describe(error)})`,
                error,
              );
        }
        await this.pause(this.backoff(attempt, undefined), given.signal);
        continue;
      }
      gate.leave(response.headers, response.status);
      if (attempt >= maxRetries || !this.asksToWait(response, repeatable)) return response;
      const delay = this.backoff(attempt, retryAfterSeconds(response.headers));
      if (delay > this.options.maxWaitMs) return response;
      await response.body?.cancel().catch(() => {});
      await this.pause(delay, given.signal);
    }
  };

  /** The request with its `User-Agent` and, on a POST, its `Idempotency-Key`. */
  private prepare(given: Request): Request {
    const { userAgent } = this.options;
    const addAgent = userAgent !== undefined && !given.headers.has('user-agent');
    const addKey = given.method === 'POST' && !given.headers.has(IDEMPOTENCY_KEY);
    if (!addAgent && !addKey) return given;
    const headers = new Headers(given.headers);
    if (addAgent) headers.set('user-agent', userAgent);
    if (addKey) headers.set(IDEMPOTENCY_KEY, newIdempotencyKey());
    return new Request(given, { headers });
  }

  /** One attempt, within its time limit. */
  private async attempt(request: Request): Promise<Response> {
    const { timeoutMs } = this.options;
    if (timeoutMs <= 0) return this.options.fetch(request.clone());
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = anySignal([request.signal, timeout]);
    try {
      return await this.options.fetch(new Request(request.clone(), { signal }));
    } catch (error) {
      if (timeout.aborted && !request.signal.aborted) {
        throw new ConnectionError(
          'timeout',
          `${request.method} ${request.url}: no answer within ${timeoutMs} ms`,
          error,
        );
      }
      throw error;
    }
  }

  /**
   * 429 is always worth another try (the service did nothing); 503, 502, 504 and the 409 of a
   * key still in use (which comes with Retry-After) only when the request is safe to repeat.
   */
  private asksToWait(response: Response, repeatable: boolean): boolean {
    const { status } = response;
    if (status === 429) return true;
    if (!repeatable) return false;
    if (status === 409) return response.headers.has('retry-after');
    return status === 502 || status === 503 || status === 504;
  }

  /**
   * Exponential back-off (0.5 s, 1 s, 2 s … up to 8 s), never shorter than `Retry-After`, plus
   * up to a quarter more at random so that waiting clients do not come back together.
   */
  private backoff(attempt: number, retryAfter: number | undefined): number {
    const exponential = Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** attempt);
    const delay = Math.max(exponential, (retryAfter ?? 0) * 1000);
    return delay + Math.floor(this.options.random() * delay * 0.25);
  }

  private async pause(ms: number, signal: AbortSignal): Promise<void> {
    try {
      await this.options.sleep(ms, signal);
    } catch (error) {
      throw stopped(signal, error);
    }
  }

  /** A call the client will not send: the key is limited for longer than it may wait. */
  private limited(limit: LimitedFor): AnimalStoreError {
    const seconds = Math.ceil(limit.ms / 1000);
    return new RateLimitError({
      status: 429,
      code: 'rate_limited',
      message:
        `Not sent: the key is rate limited for another ${seconds} s, longer than this client ` +
        `waits (maxWaitMs ${this.options.maxWaitMs}).`,
      retryAfter: seconds,
    });
  }
}

/** What a call stopped by its signal throws: `timeout` when its time limit stopped it. */
function stopped(signal: AbortSignal, error: unknown): AnimalStoreError {
  if (error instanceof AnimalStoreError) return error;
  return isTimeout(signal.reason)
    ? new ConnectionError('timeout', 'The call did not finish within its timeoutMs.', error)
    : new ConnectionError('aborted', 'The request was aborted.', error);
}

/**
 * An error that came instead of an answer (or of its body), outside the transport: a time
 * limit's, an abort's, or the connection's.
 */
export function noAnswer(error: unknown, what: string): AnimalStoreError {
  if (isTimeout(error)) return new ConnectionError('timeout', `${what}: time ran out.`, error);
  if (isAbort(error)) return new ConnectionError('aborted', `${what}: aborted.`, error);
  return new ConnectionError('connection_failed', `${what} (${describe(error)}).`, error);
}

/** The reason `AbortSignal.timeout` aborts with. */
function isTimeout(reason: unknown): boolean {
  return reason instanceof Error && reason.name === 'TimeoutError';
}

function isAbort(reason: unknown): boolean {
  return reason instanceof Error && reason.name === 'AbortError';
}

/**
 * A signal aborted when any of these is, with its reason: `AbortSignal.any`, or where a browser
 * lacks it (Safari before 17.4), listeners that go with the first abort.
 */
export function anySignal(signals: AbortSignal[]): AbortSignal {
  if (typeof AbortSignal.any === 'function') return AbortSignal.any(signals);
  const controller = new AbortController();
  const done = signals.find((signal) => signal.aborted);
  if (done) {
    controller.abort(done.reason);
    return controller.signal;
  }
  const stop = (event: Event) => {
    for (const signal of signals) signal.removeEventListener('abort', stop);
    controller.abort((event.target as AbortSignal).reason);
  };
  for (const signal of signals) signal.addEventListener('abort', stop);
  return controller.signal;
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
    return `${error.message}${cause}`;
  }
  return String(error);
}

/** A random UUID; `crypto.randomUUID` exists only in secure contexts, getRandomValues always. */
export function newIdempotencyKey(): string {
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** setTimeout as a promise that an abort ends early. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', stop);
      resolve();
    }, ms);
    const stop = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', stop, { once: true });
  });
}
