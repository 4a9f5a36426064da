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
  plain,
  post,
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
  create(account: NewAccount, options?: CreateOptions): Promise<CreatedAccount>;
  /** The key's account, with its plan's limits and usage. */
  get(options?: CallOptions): Promise<Account>;
}

/** API keys, managed with the account's email and password. */
export interface KeysResource {
  /** A new key; its secret (`key`) is shown this once. */
  create(
    credentials: Credentials,
    key?: NewApiKey,
    options?: CreateOptions,
  ): Promise<CreatedApiKey>;
  list(credentials: Credentials, options?: CallOptions): Promise<ApiKey[]>;
  revoke(credentials: Credentials, keyId: string, options?: CallOptions): Promise<void>;
}

export function accountsResource({ api }: Requests): AccountsResource {
  return {
    create: (account, o) => unwrap(api.POST('/accounts', { body: account, ...post(o) })),
    get: (o) => unwrap(api.GET('/account', plain(o))),
  };
}

export function keysResource({ api }: Requests): KeysResource {
  const basic = (credentials: Credentials) => ({
    authorization: `Basic ${base64(`${credentials.email}:${credentials.password}`)}`,
  });
  return {
    create: (credentials, key = {}, o) => {
      const { signal, headers } = post(o);
      return unwrap(
        api.POST('/keys', { body: key, signal, headers: { ...headers, ...basic(credentials) } }),
      );
    },
    list: (credentials, o) =>
      unwrap(api.GET('/keys', { headers: basic(credentials), ...plain(o) })),
    revoke: async (credentials, keyId, o) => {
      await unwrap(
        api.DELETE('/keys/{keyId}', {
          params: { path: { keyId } },
          headers: basic(credentials),
          ...plain(o),
        }),
      );
    },
  };
}

/** Base64 of the text's UTF-8 bytes (btoa alone takes Latin-1 only). */
function base64(text: string): string {
  let binary = '';
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary);
}
