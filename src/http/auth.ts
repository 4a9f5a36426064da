import type { FastifyRequest } from 'fastify';
import type { Account } from '../domain/accounts.js';
import { authenticatePassword } from '../domain/accounts.js';
import type { KeyAuthenticator } from '../domain/api-keys.js';
import { ApiError } from '../errors.js';
import type { Db } from '../store/database.js';

export interface Caller {
  account: Account;
  /** The API key used, or null when the caller signed in with email and password. */
  keyId: string | null;
}

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller | null;
  }
}

const BEARER_CHALLENGE = 'Bearer realm="animal-store"';
const BASIC_CHALLENGE = 'Basic realm="animal-store", charset="UTF-8"';

function unauthorized(
  code:
    | 'missing_credentials'
    | 'malformed_authorization'
    | 'invalid_api_key'
    | 'invalid_credentials',
  message: string,
  challenge: string,
): ApiError {
  return new ApiError(code, message, undefined, { 'www-authenticate': challenge });
}

/** `Authorization: Bearer <API_KEY>`; the scheme name is case-insensitive (RFC 9110 §11.1). */
export function bearerAuth(keys: KeyAuthenticator) {
  return async (request: FastifyRequest): Promise<void> => {
    const header = request.headers.authorization;
    if (header === undefined) {
      throw unauthorized(
        'missing_credentials',
        'Send your API key as `Authorization: Bearer <API_KEY>`.',
        BEARER_CHALLENGE,
      );
    }
    const match = /^Bearer +([^\s]+) *$/i.exec(header);
    if (!match?.[1]) {
      throw unauthorized(
        'malformed_authorization',
        'The Authorization header must be `Bearer <API_KEY>`.',
        BEARER_CHALLENGE,
      );
    }
    const result = await keys.authenticate(match[1]);
    if (!result.ok) {
      throw unauthorized(result.code, result.message, `${BEARER_CHALLENGE}, error="invalid_token"`);
    }
    request.caller = { account: result.value.account, keyId: result.value.keyId };
  };
}

/** `Authorization: Basic base64(email:password)` (RFC 7617), for managing keys. */
export function basicAuth(db: Db) {
  return async (request: FastifyRequest): Promise<void> => {
    const header = request.headers.authorization;
    if (header === undefined) {
      throw unauthorized(
        'missing_credentials',
        'Sign in with HTTP Basic: `Authorization: Basic base64(email:password)`.',
        BASIC_CHALLENGE,
      );
    }
    const match = /^Basic +([A-Za-z0-9+/]+={0,2}) *$/i.exec(header);
    const decoded = match?.[1] ? Buffer.from(match[1], 'base64').toString('utf8') : '';
    const colon = decoded.indexOf(':');
    if (colon <= 0) {
      throw unauthorized(
        'malformed_authorization',
        'The Authorization header must be `Basic base64(email:password)`.',
        BASIC_CHALLENGE,
      );
    }
    const result = await authenticatePassword(
      db,
      decoded.slice(0, colon),
      decoded.slice(colon + 1),
    );
    if (!result.ok) throw unauthorized(result.code, result.message, BASIC_CHALLENGE);
    request.caller = { account: result.value, keyId: null };
  };
}

/** The caller set by the scope's auth hook; a route without one is a wiring bug. */
export function callerOf(request: FastifyRequest): Caller {
  if (!request.caller) throw new Error(`no auth hook on ${request.routeOptions.url}`);
  return request.caller;
}
