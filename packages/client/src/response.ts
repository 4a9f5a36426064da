/**
 * What an answer said besides its body: its request id, status, replay, rate-limit state and
 * headers. Every result carries it as `lastResponse`, a non-enumerable property (stripe-node's
 * name and form), so the JSON users get is unchanged: `JSON.stringify`, spreads and
 * `deepEqual` do not see it. A call's promise also has `withResponse()` (as openai-node's
 * APIPromise), which reaches it for answers without a body (a DELETE's 204) too.
 * docs/decisions/0079-sdk-response-metadata.md
 */
import { type RateLimitState, readRateLimit } from './rate-limit.js';

/** One answer of the service, as a call's result or error carries it. */
export interface LastResponse {
  /**
   * The answer's `X-Request-Id`: the `X-Request-Id` the call sent when the service took it, else
   * one it made. Quote it to support; `client.requests.get(requestId)` finds the request.
   */
  readonly requestId: string | undefined;
  /** The HTTP status. */
  readonly status: number;
  /** True when the answer is the replay of a POST with the same `Idempotency-Key` (`Idempotent-Replayed: true`). */
  readonly idempotentReplayed: boolean;
  /** The `Idempotency-Key` the call sent (a POST's), given or made by the client. */
  readonly idempotencyKey: string | undefined;
  /** The key's rate-limit state as this answer told it; undefined when it carried none. */
  readonly rateLimit: RateLimitState | undefined;
  /** Every header of the answer. */
  readonly headers: Headers;
}

/**
 * A result with the answer it came in: an object or array gets a non-enumerable `lastResponse`;
 * `void` (an answer without a body) stays itself (`withResponse()` reaches its answer).
 */
export type WithResponse<T> = T extends object ? T & { readonly lastResponse: LastResponse } : T;

/** A result and the answer it came in, as `withResponse()` gives them. */
export interface Answered<T> {
  readonly data: WithResponse<T>;
  readonly response: LastResponse;
}

/** The metadata of an answer, read when it comes (its rate-limit state against this clock). */
export function lastResponseOf(
  response: Response,
  idempotencyKey: string | undefined,
  now: number = Date.now(),
): LastResponse {
  const { headers } = response;
  return {
    requestId: headers.get('x-request-id') ?? undefined,
    status: response.status,
    idempotentReplayed: headers.get('idempotent-replayed')?.trim().toLowerCase() === 'true',
    idempotencyKey,
    rateLimit: readRateLimit(headers, now),
    headers,
  };
}

/**
 * `value` with `lastResponse` as a non-enumerable, read-only property, when it is an object
 * (arrays too); anything else as it is.
 */
export function withLastResponse<T>(value: T, response: LastResponse): WithResponse<T> {
  if (typeof value === 'object' && value !== null && Object.isExtensible(value)) {
    Object.defineProperty(value, 'lastResponse', {
      value: response,
      enumerable: false,
      writable: false,
      configurable: true,
    });
  }
  return value as WithResponse<T>;
}

/**
 * The promise every call returns: it resolves to the result (with its `lastResponse`), and
 * `withResponse()` resolves to `{ data, response }`. The call is sent at once, as with any
 * promise; awaiting either form reads the same answer, once.
 */
export class ApiPromise<T> extends Promise<WithResponse<T>> {
  // `then`, `catch` and `finally` answer plain promises, never another ApiPromise.
  static override get [Symbol.species](): PromiseConstructor {
    return Promise;
  }

  readonly #answered: Promise<Answered<T>>;
  #data: Promise<WithResponse<T>> | undefined;

  constructor(answered: Promise<Answered<T>>) {
    // The base promise is never settled nor read: `then` below answers from `answered`, so a
    // failure is reported once, to whoever awaits, in whichever form.
    super(() => {});
    this.#answered = answered;
  }

  /** The result and the answer it came in: `const { data, response } = await call.withResponse()`. */
  withResponse(): Promise<Answered<T>> {
    return this.#answered;
  }

  // biome-ignore lint/suspicious/noThenProperty: it is a promise; its then answers the call's result.
  override then<R1 = WithResponse<T>, R2 = never>(
    onfulfilled?: ((value: WithResponse<T>) => R1 | PromiseLike<R1>) | null,
    onrejected?: ((reason: unknown) => R2 | PromiseLike<R2>) | null,
  ): Promise<R1 | R2> {
    this.#data ??= this.#answered.then(({ data }) => data);
    return this.#data.then(onfulfilled, onrejected);
  }
}
