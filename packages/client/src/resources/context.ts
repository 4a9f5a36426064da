/**
 * What every resource calls through: the typed openapi-fetch clients, the answer unwrapped with
 * its metadata (`lastResponse`, `withResponse()`) or thrown as the error of its kind, and lists
 * walked page by page with the call's own signal, time limit and headers on every page.
 */
import type { Client } from 'openapi-fetch';
import { AnimalStoreError } from '../errors.js';
import { nextLink, type Page, PageList } from '../pagination.js';
import { type Answered, ApiPromise, lastResponseOf, withLastResponse } from '../response.js';
import type { paths } from '../schema.js';
import { anySignal, newIdempotencyKey, noAnswer } from '../transport.js';

/** Header fields by name, as a call or the client adds them to every request. */
export type HeaderFields = Readonly<Record<string, string>>;

/** Per-call options. */
export interface CallOptions {
  /** Aborts the call: its rate-limit waits and retries, and a list's pages still to come. */
  signal?: AbortSignal | undefined;
  /**
   * The most the call may take, in ms, its rate-limit waits and retries included (for a list:
   * each page). Past it the call fails with a `ConnectionError` whose `code` is `timeout`.
   */
  timeoutMs?: number | undefined;
  /**
   * Headers of this call (for a list: of each page), over the client's `headers`. An
   * `X-Request-Id` of up to 128 letters, digits, `_`, `.` and `-` becomes the request's id, as
   * `lastResponse.requestId` and the request log show it; retries repeat it.
   */
  headers?: HeaderFields | undefined;
}

/** Options of a call that creates something (a POST). */
export interface CreateOptions extends CallOptions {
  /**
   * The call's `Idempotency-Key`. The client makes a fresh one per call and repeats it on that
   * call's retries; give your own to make a call safe to repeat across processes.
   */
  idempotencyKey?: string | undefined;
}

export interface Requests {
  readonly api: Client<paths>;
  readonly messagesApi: Client<paths>;
  /** The API's base (`…/v1`): a next link is followed only on its origin. */
  readonly apiBase: string;
  /** Sends a request as the openapi-fetch clients do (the same gate, retries and headers). */
  readonly send: (request: Request) => Promise<Response>;
  /** What every request carries: the client's `headers`, then the key's `Authorization`. */
  readonly headers: HeaderFields;
  /** Whether the client has an API key, for the error of an answer that says none came. */
  readonly apiKey: boolean;
}

export interface FetchResult {
  data?: unknown;
  error?: unknown;
  response: Response;
}

/**
 * The signal of one request of a call: the caller's, and the call's time limit (null for none,
 * as `RequestInit` has it).
 */
export function signalOf(options: CallOptions | undefined): AbortSignal | null {
  const { signal, timeoutMs } = options ?? {};
  if (timeoutMs === undefined) return signal ?? null;
  const timeout = AbortSignal.timeout(timeoutMs);
  return signal ? anySignal([signal, timeout]) : timeout;
}

/** openapi-fetch's options of a call without a body to keep: its signal and headers. */
export function plain(options: CallOptions | undefined): {
  signal: AbortSignal | null;
  headers: HeaderFields;
} {
  return { signal: signalOf(options), headers: options?.headers ?? {} };
}

const IDEMPOTENCY_KEY = 'idempotency-key';

/** openapi-fetch's options of a POST: its signal, and its headers with its `Idempotency-Key`. */
export interface PostInit {
  signal: AbortSignal | null;
  headers: HeaderFields;
}

/**
 * A POST's result, sent by `send` with its options: the call's signal and headers, and its
 * `Idempotency-Key` (the one given as an option or a header, else a fresh one), which the
 * result's `lastResponse` names.
 */
export function created<R extends FetchResult>(
  requests: Requests,
  send: (init: PostInit) => Promise<R>,
  options: CreateOptions | undefined,
): ApiPromise<NonNullable<R['data']>> {
  const headers = options?.headers ?? {};
  const given = Object.entries(headers).find(([name]) => name.toLowerCase() === IDEMPOTENCY_KEY);
  const key = options?.idempotencyKey || given?.[1] || newIdempotencyKey();
  const others = Object.fromEntries(
    Object.entries(headers).filter(([name]) => name.toLowerCase() !== IDEMPOTENCY_KEY),
  );
  const init = { signal: signalOf(options), headers: { ...others, [IDEMPOTENCY_KEY]: key } };
  return new ApiPromise(answerOf(requests, send(init), key));
}

/**
 * A call's result with the answer it came in, or its error thrown as the `AnimalStoreError` of
 * its kind, carrying that answer too.
 */
export async function answerOf<R extends FetchResult>(
  requests: Requests,
  pending: Promise<R>,
  idempotencyKey?: string,
): Promise<Answered<NonNullable<R['data']>>> {
  let result: R;
  try {
    result = await pending;
  } catch (error) {
    // The transport throws AnimalStoreErrors; what else comes is a body cut off by an abort,
    // a time limit or the connection, read by openapi-fetch after the transport let it go.
    throw error instanceof AnimalStoreError ? error : noAnswer(error, 'The answer broke off');
  }
  const { data, error, response } = result;
  const lastResponse = lastResponseOf(response, idempotencyKey);
  if (!response.ok) {
    throw AnimalStoreError.fromAnswer(response, error, { lastResponse, apiKey: requests.apiKey });
  }
  const body = data as NonNullable<R['data']>;
  return { data: withLastResponse(body, lastResponse), response: lastResponse };
}

/** The call's result with its answer (`lastResponse`, `withResponse()`), or its error thrown. */
export function unwrap<R extends FetchResult>(
  requests: Requests,
  pending: Promise<R>,
): ApiPromise<NonNullable<R['data']>> {
  return new ApiPromise(answerOf(requests, pending));
}

/** A call answered without a body (204): `void`, its answer reached by `withResponse()`. */
export function nothing(requests: Requests, pending: Promise<FetchResult>): ApiPromise<void> {
  return new ApiPromise(
    answerOf(requests, pending).then(({ response }) => ({ data: undefined, response })),
  );
}

/**
 * A page list whose first page `first` reads; later pages follow `Link` on the API's origin.
 * Every page is requested with the call's signal, its own share of the call's time limit, and
 * the call's headers; each page carries its answer as `lastResponse`.
 */
export function pages<T>(
  requests: Requests,
  first: (init: { signal: AbortSignal | null; headers: HeaderFields }) => Promise<FetchResult>,
  options: CallOptions | undefined,
): PageList<T> {
  const read = async (pending: Promise<FetchResult>): Promise<Page<T>> => {
    const { data, response } = await answerOf(requests, pending);
    const { url } = (await pending).response;
    const next = nextLink(response.headers.get('link'), url || requests.apiBase);
    return withLastResponse({ items: data as unknown as T[], next }, response);
  };
  return new PageList<T>(
    () => read(first(plain(options))),
    async (url) => {
      // The key goes only where the API is: a next link elsewhere is refused, not followed.
      if (new URL(url).origin !== new URL(requests.apiBase).origin) {
        throw new AnimalStoreError({
          status: 0,
          code: 'foreign_link',
          message: `Not following a next link to another origin: ${url}`,
        });
      }
      return read(fetchPage(requests, url, plain(options)));
    },
  );
}

async function fetchPage(
  requests: Requests,
  url: string,
  { signal, headers }: { signal: AbortSignal | null; headers: HeaderFields },
): Promise<FetchResult> {
  const merged = new Headers(requests.headers);
  for (const [name, value] of Object.entries(headers)) merged.set(name, value);
  const response = await requests.send(new Request(url, { headers: merged, signal }));
  try {
    const body: unknown = await response.json();
    return { data: body, error: body, response };
  } catch (error) {
    if (response.ok) throw noAnswer(error, 'The page broke off');
    return { error: undefined, response };
  }
}
