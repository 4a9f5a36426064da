/**
 * What every resource calls through: the typed openapi-fetch clients, the answer unwrapped or
 * thrown as the error of its kind, and lists walked page by page with the call's own signal
 * and time limit on every page.
 */
import type { Client } from 'openapi-fetch';
import { AnimalStoreError } from '../errors.js';
import { nextLink, type Page, PageList } from '../pagination.js';
import type { paths } from '../schema.js';
import { anySignal, noAnswer } from '../transport.js';

/** Per-call options. */
export interface CallOptions {
  /** Aborts the call: its rate-limit waits and retries, and a list's pages still to come. */
  signal?: AbortSignal | undefined;
  /**
   * The most the call may take, in ms, its rate-limit waits and retries included (for a list:
   * each page). Past it the call fails with a `ConnectionError` whose `code` is `timeout`.
   */
  timeoutMs?: number | undefined;
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
  /** What every request carries (the key's `Authorization`). */
  readonly headers: Readonly<Record<string, string>>;
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

/** openapi-fetch's options of a call without a body to keep. */
export function plain(options: CallOptions | undefined): { signal: AbortSignal | null } {
  return { signal: signalOf(options) };
}

/** openapi-fetch's options of a POST: its signal, and its `Idempotency-Key` when given. */
export function post(options: CreateOptions | undefined) {
  const key = options?.idempotencyKey;
  return {
    signal: signalOf(options),
    headers: key ? { 'idempotency-key': key } : {},
  };
}

/** The answer's data, or its error thrown as the `AnimalStoreError` of its kind. */
export async function unwrap<R extends FetchResult>(
  pending: Promise<R>,
): Promise<NonNullable<R['data']>> {
  let result: R;
  try {
    result = await pending;
  } catch (error) {
    // The transport throws AnimalStoreErrors; what else comes is a body cut off by an abort,
    // a time limit or the connection, read by openapi-fetch after the transport let it go.
    throw error instanceof AnimalStoreError ? error : noAnswer(error, 'The answer broke off');
  }
  const { data, error, response } = result;
  if (!response.ok) throw AnimalStoreError.fromAnswer(response, error);
  return data as NonNullable<R['data']>;
}

/**
 * A page list whose first page `first` reads; later pages follow `Link` on the API's origin.
 * Every page is requested with the call's signal and its own share of the call's time limit.
 */
export function pages<T>(
  requests: Requests,
  first: (signal: AbortSignal | null) => Promise<FetchResult>,
  options: CallOptions | undefined,
): PageList<T> {
  const read = async (pending: Promise<FetchResult>): Promise<Page<T>> => {
    const items = (await unwrap(pending)) as T[];
    const { response } = await pending;
    return {
      items,
      next: nextLink(response.headers.get('link'), response.url || requests.apiBase),
    };
  };
  return new PageList<T>(
    () => read(first(signalOf(options))),
    async (url) => {
      // The key goes only where the API is: a next link elsewhere is refused, not followed.
      if (new URL(url).origin !== new URL(requests.apiBase).origin) {
        throw new AnimalStoreError({
          status: 0,
          code: 'foreign_link',
          message: `Not following a next link to another origin: ${url}`,
        });
      }
      return read(fetchPage(requests, url, signalOf(options)));
    },
  );
}

async function fetchPage(
  requests: Requests,
  url: string,
  signal: AbortSignal | null,
): Promise<FetchResult> {
  const response = await requests.send(new Request(url, { headers: requests.headers, signal }));
  try {
    const body: unknown = await response.json();
    return { data: body, error: body, response };
  } catch (error) {
    if (response.ok) throw noAnswer(error, 'The page broke off');
    return { error: undefined, response };
  }
}
