import createFetchClient, { type Client } from 'openapi-fetch';
import { DEFAULT_BASE_URL, resolveBaseUrl } from './base-url.js';
import { RateLimitGate, type RateLimitState } from './rate-limit.js';
import {
  type AccountsResource,
  accountsResource,
  type KeysResource,
  keysResource,
} from './resources/accounts.js';
import { type CategoriesResource, categoriesResource } from './resources/categories.js';
import type { HeaderFields, Requests } from './resources/context.js';
import { type EventsResource, eventsResource } from './resources/events.js';
import { type MessagesResource, messagesResource } from './resources/messages.js';
import { type PetsResource, petsResource } from './resources/pets.js';
import { type RequestsResource, requestsResource } from './resources/requests.js';
import { type SandboxResource, sandboxResource } from './resources/sandbox.js';
import { type StoreResource, storeResource } from './resources/store.js';
import { type WebhooksResource, webhooksResource } from './resources/webhooks.js';
import type { paths } from './schema.js';
import { type Fetch, sleep, Transport } from './transport.js';
import { VERSION } from './version.js';

export interface ClientOptions {
  /** An API key (`as_live_…`, `as_test_…`). Only sign-up and key management work without. */
  apiKey?: string | undefined;
  /**
   * The service's address: `https://api.example.com`, `http://127.0.0.1:8080/v1` (the `/v1` may
   * be left out). Default `http://127.0.0.1:8080`, the local service as `npm start` runs it.
   */
  baseUrl?: string | undefined;
  /** @deprecated The same as `baseUrl`, which replaces it (an address: there are no named environments). */
  environment?: string | undefined;
  /** The messages endpoint's base, when it is not `baseUrl` without `/v1`. */
  messagesUrl?: string | undefined;
  /** Retries of one call after its first attempt (default 3). */
  maxRetries?: number | undefined;
  /**
   * The longest the client waits, in ms, for a rate-limit window to refill or for the
   * `Retry-After` of a 429 or 503 (default 120 000). Past it the call fails with a
   * `RateLimitError`, unsent.
   */
  maxWaitMs?: number | undefined;
  /**
   * Each attempt's time limit in ms, from sending to the answer's headers (default 60 000; 0:
   * none). A whole call's limit, its waits included, is the per-call `timeoutMs`.
   */
  timeoutMs?: number | undefined;
  /** The fetch to use (default: the global one). */
  fetch?: Fetch | undefined;
  /**
   * Headers of every request (a call's `headers` go over them). An `Authorization` made from
   * `apiKey` goes over an `Authorization` given here.
   */
  headers?: HeaderFields | undefined;
  /**
   * Your application, named in the `User-Agent` after the client's own, as stripe-node's
   * `appInfo`: `animal-store-client/1.0.0 node/24.1.0 MyApp/1.2 (https://myapp.example)`.
   */
  appInfo?: AppInfo | undefined;
}

/** An application that uses the client, for the `User-Agent`. */
export interface AppInfo {
  /** A token: letters, digits and ``!#$%&'*+-.^_`|~``. */
  name: string;
  /** A token, as `name`. */
  version?: string | undefined;
  /** Where to learn about it: printable ASCII without spaces, `(`, `)` or `\`. */
  url?: string | undefined;
}

export type { Credentials } from './resources/accounts.js';
export type { CallOptions, CreateOptions, HeaderFields } from './resources/context.js';

export interface AnimalStoreClient {
  /** What the service said last about the key's rate limits, or undefined before any answer. */
  readonly rateLimit: RateLimitState | undefined;
  readonly pets: PetsResource;
  readonly categories: CategoriesResource;
  readonly store: StoreResource;
  readonly messages: MessagesResource;
  readonly accounts: AccountsResource;
  /** API keys, managed with the account's email and password. */
  readonly keys: KeysResource;
  /** The account's events, as webhooks deliver them, for those who poll. */
  readonly events: EventsResource;
  readonly webhooks: WebhooksResource;
  /** The account's request log: its API requests of the last 7 days, and their counts. */
  readonly requests: RequestsResource;
  /** The account's test data, reset (outside production). */
  readonly sandbox: SandboxResource;
  /** The typed openapi-fetch clients underneath (same retries and limits), for anything else. */
  readonly api: Client<paths>;
  readonly messagesApi: Client<paths>;
}

export function createClient(options: ClientOptions = {}): AnimalStoreClient {
  const base = endpointsOf(options);
  const app = appInfoOf(options.appInfo);
  const maxWaitMs = options.maxWaitMs ?? 120_000;
  const gate = new RateLimitGate({ maxWaitMs, now: Date.now, sleep, random: Math.random });
  const given = options.fetch;
  const transport = new Transport({
    // Called unbound: a browser's fetch refuses to run with another `this`.
    fetch: given ?? ((request) => globalThis.fetch(request)),
    gate,
    maxRetries: options.maxRetries ?? 3,
    timeoutMs: options.timeoutMs ?? 60_000,
    maxWaitMs,
    sleep,
    random: Math.random,
    userAgent: userAgent(undefined, undefined, app),
  });
  const headers = headersOf(options.headers);
  if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;
  const api = createFetchClient<paths>({ baseUrl: base.api, fetch: transport.send, headers });
  const messagesApi = createFetchClient<paths>({
    baseUrl: base.messages,
    fetch: transport.send,
    headers,
  });
  const requests: Requests = {
    api,
    messagesApi,
    apiBase: base.api,
    send: transport.send,
    headers,
    apiKey: Boolean(options.apiKey),
  };

  return {
    get rateLimit() {
      return gate.last;
    },
    pets: petsResource(requests),
    categories: categoriesResource(requests),
    store: storeResource(requests),
    messages: messagesResource(requests),
    accounts: accountsResource(requests),
    keys: keysResource(requests),
    events: eventsResource(requests),
    webhooks: webhooksResource(requests),
    requests: requestsResource(requests),
    sandbox: sandboxResource(requests),
    api,
    messagesApi,
  };
}

/** The bases the options name: `baseUrl`, or the older `environment`, or the local service. */
function endpointsOf(options: ClientOptions) {
  const { baseUrl, environment, messagesUrl } = options;
  if (baseUrl !== undefined && environment !== undefined && baseUrl !== environment) {
    throw new TypeError('Give baseUrl or environment (its older name), not both.');
  }
  if (baseUrl === undefined && environment !== undefined) {
    return resolveBaseUrl(environment, messagesUrl, 'environment');
  }
  return resolveBaseUrl(baseUrl ?? DEFAULT_BASE_URL, messagesUrl);
}

/**
 * The client's headers, checked now: a name or value `fetch` would refuse throws here, naming
 * the option, rather than at the first call. Names are kept lower-case, so that the key's
 * `Authorization` replaces one given here rather than going beside it.
 */
function headersOf(given: HeaderFields | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  try {
    for (const [name, value] of new Headers(given)) headers[name] = value;
  } catch (error) {
    throw new TypeError(`headers: ${error instanceof Error ? error.message : String(error)}`, {
      cause: error,
    });
  }
  return headers;
}

/** A token of RFC 9110 §5.6.2, as a product and its version must be (§10.1.5). */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Printable ASCII that needs no quoting in a comment (§5.6.5): no space, `(`, `)` or `\`. */
const COMMENT_TEXT = /^[\x21-\x27\x2a-\x5b\x5d-\x7e]+$/;

/** `appInfo` as the `User-Agent`'s product and comment; a value that would break it throws. */
function appInfoOf(info: AppInfo | undefined): string | undefined {
  if (info === undefined) return undefined;
  const check = (field: string, value: unknown, pattern: RegExp, what: string) => {
    if (typeof value !== 'string' || !pattern.test(value)) {
      throw new TypeError(`appInfo.${field} must be ${what}; got ${JSON.stringify(value)}.`);
    }
  };
  const token = "letters, digits and !#$%&'*+-.^_`|~ only";
  check('name', info.name, TOKEN, token);
  if (info.version !== undefined) check('version', info.version, TOKEN, token);
  if (info.url !== undefined) {
    check('url', info.url, COMMENT_TEXT, 'printable ASCII without spaces, (, ) or \\');
  }
  const product = info.version === undefined ? info.name : `${info.name}/${info.version}`;
  return info.url === undefined ? product : `${product} (${info.url})`;
}

/**
 * `animal-store-client/<version> node/<version>`, then the application's `appInfo`, where a
 * script may set `User-Agent` (Node, and runtimes that present themselves as it). Not in
 * browsers, which forbid or ignore it, and where a custom one would only add a CORS preflight.
 */
export function userAgent(
  runtime: unknown = (globalThis as { process?: unknown }).process,
  browser: boolean = 'document' in globalThis,
  app?: string,
): string | undefined {
  const node = (runtime as { versions?: { node?: unknown } } | undefined)?.versions?.node;
  if (browser || typeof node !== 'string') return undefined;
  const agent = `animal-store-client/${VERSION} node/${node}`;
  return app === undefined ? agent : `${agent} ${app}`;
}
