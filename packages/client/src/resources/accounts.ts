import type { ApiPromise } from '../response.js';
import type {
  Account,
  ApiKey,
  CreatedAccount,
  CreatedApiKey,
  NewAccount,
  NewApiKey,
} from '../types.js';
import {
  type CallOptions,
  type CreateOptions,
  created,
  nothing,
  plain,
  type Requests,
  unwrap,
} from './context.js';

/** Account email and password, for sign-up's neighbours: key management (HTTP Basic). */
export interface Credentials {
  email: string;
  password: string;
}

export interface AccountsResource {
  /** Signs up (no key needed). */
  create(account: NewAccount, options?: CreateOptions): ApiPromise<CreatedAccount>;
  /** The key's account, with its plan's limits and usage. */
  get(options?: CallOptions): ApiPromise<Account>;
}

/** API keys, managed with the account's email and password. */
export interface KeysResource {
  /** A new key; its secret (`key`) is shown this once. */
  create(
    credentials: Credentials,
    key?: NewApiKey,
    options?: CreateOptions,
  ): ApiPromise<CreatedApiKey>;
  list(credentials: Credentials, options?: CallOptions): ApiPromise<ApiKey[]>;
  revoke(credentials: Credentials, keyId: string, options?: CallOptions): ApiPromise<void>;
}

export function accountsResource(requests: Requests): AccountsResource {
  const { api } = requests;
  return {
    create: (account, o) =>
      created(requests, (init) => api.POST('/accounts', { body: account, ...init }), o),
    get: (o) => unwrap(requests, api.GET('/account', plain(o))),
  };
}

export function keysResource(requests: Requests): KeysResource {
  const { api } = requests;
  // The account's password, over the call's headers: these calls take no API key.
  const basic = (
    credentials: Credentials,
    init: { headers: Readonly<Record<string, string>> },
  ) => ({
    ...init,
    headers: {
      ...init.headers,
      authorization: `Basic ${base64(`${credentials.email}:${credentials.password}`)}`,
    },
  });
  return {
    create: (credentials, key = {}, o) =>
      created(requests, (init) => api.POST('/keys', { body: key, ...basic(credentials, init) }), o),
    list: (credentials, o) => unwrap(requests, api.GET('/keys', basic(credentials, plain(o)))),
    revoke: (credentials, keyId, o) =>
      nothing(
        requests,
        api.DELETE('/keys/{keyId}', {
          params: { path: { keyId } },
          ...basic(credentials, plain(o)),
        }),
      ),
  };
}

/** Base64 of the text's UTF-8 bytes (btoa alone takes Latin-1 only). */
function base64(text: string): string {
  let binary = '';
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary);
}
