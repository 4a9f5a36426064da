import createFetchClient, { type Client } from 'openapi-fetch';
import { DEFAULT_BASE_URL, resolveBaseUrl } from './base-url.js';
import { AnimalStoreError } from './errors.js';
import { nextLink, type Page, PageList } from './pagination.js';
import { RateLimitGate, type RateLimitState } from './rate-limit.js';
import type { paths } from './schema.js';
import { type Fetch, sleep, Transport } from './transport.js';
import type {
  Account,
  ApiKey,
  Category,
  CategoryUpdate,
  CreatedAccount,
  CreatedApiKey,
  Inventory,
  ListCategoriesQuery,
  ListOrdersQuery,
  ListPetsQuery,
  Message,
  NewAccount,
  NewApiKey,
  NewCategory,
  NewOrder,
  NewPet,
  Order,
  OrderUpdate,
  Pet,
  PetUpdate,
  QueuedMessage,
} from './types.js';

export interface ClientOptions {
  /** An API key (`as_live_…`, `as_test_…`). Only sign-up and key management work without. */
  apiKey?: string;
  /**
   * The service's address: `https://api.example.com`, `http://127.0.0.1:8080/v1` (the `/v1` may
   * be left out). Default `http://127.0.0.1:8080`, the local service as `npm start` runs it.
   */
  baseUrl?: string;
  /** @deprecated The same as `baseUrl`, which replaces it (an address: there are no named environments). */
  environment?: string;
  /** The messages endpoint's base, when it is not `baseUrl` without `/v1`. */
  messagesUrl?: string;
  /** Retries of one call after its first attempt (default 3). */
  maxRetries?: number;
  /**
   * The longest the client waits, in ms, for a rate-limit window to refill or for the
   * `Retry-After` of a 429 or 503 (default 120 000). Past it the call fails with a 429
   * `AnimalStoreError`, unsent.
   */
  maxWaitMs?: number;
  /** Each attempt's time limit in ms (default 60 000; 0: none). */
  timeoutMs?: number;
  /** The fetch to use (default: the global one). */
  fetch?: Fetch;
}

/** Per-call options. */
export interface CallOptions {
  signal?: AbortSignal;
}

/** Options of a call that creates something (a POST). */
export interface CreateOptions extends CallOptions {
  /**
   * The call's `Idempotency-Key`. The client makes a fresh one per call and repeats it on that
   * call's retries; give your own to make a call safe to repeat across processes.
   */
  idempotencyKey?: string;
}

/** Account email and password, for sign-up's neighbours: key management (HTTP Basic). */
export interface Credentials {
  email: string;
  password: string;
}

export interface AnimalStoreClient {
  /** What the service said last about the key's rate limits, or undefined before any answer. */
  readonly rateLimit: RateLimitState | undefined;
  readonly pets: {
    /** The account's pets, by id, through every page: `for await (const pet of …)`. */
    list(query?: ListPetsQuery, options?: CallOptions): PageList<Pet>;
    /** One pet, read through `GET /v1/pets?id=` (not the deprecated `getPet`). */
    get(petId: number, options?: CallOptions): Promise<Pet>;
    create(pet: NewPet, options?: CreateOptions): Promise<Pet>;
    update(petId: number, changes: PetUpdate, options?: CallOptions): Promise<Pet>;
    delete(petId: number, options?: CallOptions): Promise<void>;
  };
  readonly categories: {
    list(query?: ListCategoriesQuery, options?: CallOptions): PageList<Category>;
    get(categoryId: number, options?: CallOptions): Promise<Category>;
    create(category: NewCategory, options?: CreateOptions): Promise<Category>;
    update(categoryId: number, changes: CategoryUpdate, options?: CallOptions): Promise<Category>;
    delete(categoryId: number, options?: CallOptions): Promise<void>;
  };
  readonly store: {
    readonly orders: {
      list(query?: ListOrdersQuery, options?: CallOptions): PageList<Order>;
      get(orderId: number, options?: CallOptions): Promise<Order>;
      /** Places an order for an available pet, which becomes `pending`. */
      create(order: NewOrder, options?: CreateOptions): Promise<Order>;
      update(orderId: number, changes: OrderUpdate, options?: CallOptions): Promise<Order>;
    };
    /** Counts of the account's pets by status. */
    inventory(options?: CallOptions): Promise<Inventory>;
  };
  readonly messages: {
    /** Queues a message (`POST /messages` on the messages server). */
    send(message: string, options?: CreateOptions): Promise<QueuedMessage>;
    get(messageId: string, options?: CallOptions): Promise<Message>;
  };
  readonly accounts: {
    /** Signs up (no key needed). */
    create(account: NewAccount, options?: CreateOptions): Promise<CreatedAccount>;
    /** The key's account, with its plan's limits and usage. */
    get(options?: CallOptions): Promise<Account>;
  };
  /** API keys, managed with the account's email and password. */
  readonly keys: {
    /** A new key; its secret (`key`) is shown this once. */
    create(
      credentials: Credentials,
      key?: NewApiKey,
      options?: CreateOptions,
    ): Promise<CreatedApiKey>;
    list(credentials: Credentials, options?: CallOptions): Promise<ApiKey[]>;
    revoke(credentials: Credentials, keyId: string, options?: CallOptions): Promise<void>;
  };
  /** The typed openapi-fetch clients underneath (same retries and limits), for anything else. */
  readonly api: Client<paths>;
  readonly messagesApi: Client<paths>;
}

interface FetchResult {
  data?: unknown;
  error?: unknown;
  response: Response;
}

/** The answer's data, or its error thrown as an `AnimalStoreError`. */
async function unwrap<R extends FetchResult>(pending: Promise<R>): Promise<NonNullable<R['data']>> {
  const { data, error, response } = await pending;
  if (!response.ok) throw AnimalStoreError.fromAnswer(response, error);
  return data as NonNullable<R['data']>;
}

export function createClient(options: ClientOptions = {}): AnimalStoreClient {
  const base = endpointsOf(options);
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
  });
  const headers: Record<string, string> = {};
  if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;
  const api = createFetchClient<paths>({ baseUrl: base.api, fetch: transport.send, headers });
  const messagesApi = createFetchClient<paths>({
    baseUrl: base.messages,
    fetch: transport.send,
    headers,
  });

  /** A page list whose first page `first` reads; later pages follow `Link` on the same origin. */
  function pages<T>(first: () => Promise<FetchResult>): PageList<T> {
    const read = async (result: FetchResult): Promise<Page<T>> => {
      const items = (await unwrap(Promise.resolve(result))) as T[];
      const { response } = result;
      return { items, next: nextLink(response.headers.get('link'), response.url || base.api) };
    };
    return new PageList<T>(
      async () => read(await first()),
      async (url) => {
        // The key goes only where the API is: a next link elsewhere is refused, not followed.
        if (new URL(url).origin !== new URL(base.api).origin) {
          throw new AnimalStoreError({
            status: 0,
            code: 'foreign_link',
            message: `Not following a next link to another origin: ${url}`,
          });
        }
        const response = await transport.send(new Request(url, { headers }));
        const body = await response.json().catch(() => undefined);
        return read({ data: body, error: body, response });
      },
    );
  }

  const basic = (credentials: Credentials) => ({
    authorization: `Basic ${base64(`${credentials.email}:${credentials.password}`)}`,
  });
  const post = (options: CreateOptions | undefined) => ({
    signal: options?.signal,
    headers: options?.idempotencyKey ? { 'idempotency-key': options.idempotencyKey } : {},
  });

  return {
    get rateLimit() {
      return gate.last;
    },
    pets: {
      list: (query = {}, o) =>
        pages<Pet>(() => api.GET('/pets', { params: { query }, signal: o?.signal })),
      get: async (petId, o) => {
        const pets = await unwrap(
          api.GET('/pets', { params: { query: { id: [petId] } }, signal: o?.signal }),
        );
        const pet = pets.find((p) => p.id === petId);
        if (!pet) {
          throw new AnimalStoreError({
            status: 404,
            code: 'not_found',
            message: `No pet ${petId} in this account.`,
          });
        }
        return pet;
      },
      create: (pet, o) => unwrap(api.POST('/pets', { body: pet, ...post(o) })),
      update: (petId, changes, o) =>
        unwrap(
          api.PATCH('/pets/{petId}', {
            params: { path: { petId } },
            body: changes,
            signal: o?.signal,
          }),
        ),
      delete: async (petId, o) => {
        await unwrap(
          api.DELETE('/pets/{petId}', { params: { path: { petId } }, signal: o?.signal }),
        );
      },
    },
    categories: {
      list: (query = {}, o) =>
        pages<Category>(() => api.GET('/categories', { params: { query }, signal: o?.signal })),
      get: (categoryId, o) =>
        unwrap(
          api.GET('/categories/{categoryId}', {
            params: { path: { categoryId } },
            signal: o?.signal,
          }),
        ),
      create: (category, o) => unwrap(api.POST('/categories', { body: category, ...post(o) })),
      update: (categoryId, changes, o) =>
        unwrap(
          api.PATCH('/categories/{categoryId}', {
            params: { path: { categoryId } },
            body: changes,
            signal: o?.signal,
          }),
        ),
      delete: async (categoryId, o) => {
        await unwrap(
          api.DELETE('/categories/{categoryId}', {
            params: { path: { categoryId } },
            signal: o?.signal,
          }),
        );
      },
    },
    store: {
      orders: {
        list: (query = {}, o) =>
          pages<Order>(() => api.GET('/store/orders', { params: { query }, signal: o?.signal })),
        get: (orderId, o) =>
          unwrap(
            api.GET('/store/orders/{orderId}', {
              params: { path: { orderId } },
              signal: o?.signal,
            }),
          ),
        create: (order, o) => unwrap(api.POST('/store/orders', { body: order, ...post(o) })),
        update: (orderId, changes, o) =>
          unwrap(
            api.PATCH('/store/orders/{orderId}', {
              params: { path: { orderId } },
              body: changes,
              signal: o?.signal,
            }),
          ),
      },
      inventory: (o) => unwrap(api.GET('/store/inventory', { signal: o?.signal })),
    },
    messages: {
      send: (message, o) =>
        unwrap(messagesApi.POST('/messages', { body: { message }, ...post(o) })),
      get: (messageId, o) =>
        unwrap(
          messagesApi.GET('/messages/{messageId}', {
            params: { path: { messageId } },
            signal: o?.signal,
          }),
        ),
    },
    accounts: {
      create: (account, o) => unwrap(api.POST('/accounts', { body: account, ...post(o) })),
      get: (o) => unwrap(api.GET('/account', { signal: o?.signal })),
    },
    keys: {
      create: (credentials, key = {}, o) =>
        unwrap(
          api.POST('/keys', {
            body: key,
            signal: o?.signal,
            headers: { ...post(o).headers, ...basic(credentials) },
          }),
        ),
      list: (credentials, o) =>
        unwrap(api.GET('/keys', { headers: basic(credentials), signal: o?.signal })),
      revoke: async (credentials, keyId, o) => {
        await unwrap(
          api.DELETE('/keys/{keyId}', {
            params: { path: { keyId } },
            headers: basic(credentials),
            signal: o?.signal,
          }),
        );
      },
    },
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

/** Base64 of the text's UTF-8 bytes (btoa alone takes Latin-1 only). */
function base64(text: string): string {
  let binary = '';
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary);
}
