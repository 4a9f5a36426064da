import type { PageList } from '../pagination.js';
import type { ApiPromise } from '../response.js';
import type {
  ListRequestsQuery,
  RequestLogEntry,
  RequestLogEntryDetail,
  RequestStats,
  RequestStatsPeriod,
} from '../types.js';
import { type CallOptions, pages, plain, type Requests, unwrap } from './context.js';

/** The account's request log: its API requests of the last 7 days, as they were answered. */
export interface RequestsResource {
  /**
   * The requests, newest first, through every page; by `status` (`'404'`, or a class:
   * `'4xx'`), `keyId`, `method` or `path`. A request is listed within a second of its answer.
   */
  list(query?: ListRequestsQuery, options?: CallOptions): PageList<RequestLogEntry>;
  /**
   * One request, by its `X-Request-Id` (an `AnimalStoreError`'s `requestId`); for a 4xx or 5xx
   * answer with its request body (secrets redacted, at most 4 KB) and the Error answered.
   */
  get(requestId: string, options?: CallOptions): ApiPromise<RequestLogEntryDetail>;
  /** Requests per hour over the last 7 days (or `24h`), split into 2xx, 4xx, 5xx and 429. */
  stats(query?: { period?: RequestStatsPeriod }, options?: CallOptions): ApiPromise<RequestStats>;
}

export function requestsResource(requests: Requests): RequestsResource {
  const { api } = requests;
  return {
    list: (query = {}, o) =>
      pages<RequestLogEntry>(
        requests,
        (init) => api.GET('/requests', { params: { query }, ...init }),
        o,
      ),
    get: (requestId, o) =>
      unwrap(
        requests,
        api.GET('/requests/{requestId}', { params: { path: { requestId } }, ...plain(o) }),
      ) as ApiPromise<RequestLogEntryDetail>,
    stats: (query = {}, o) =>
      unwrap(requests, api.GET('/requests/stats', { params: { query }, ...plain(o) })),
  };
}
