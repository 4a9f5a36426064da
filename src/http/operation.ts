import type { FastifyContextConfig, preValidationAsyncHookHandler } from 'fastify';
import type { TNull, TSchema } from 'typebox';
import type { Scope } from '../domain/scopes.js';
import { ERRORS, type ErrorCode } from '../errors.js';
import { describeCodes, ERROR_CODES_KEY, ErrorBody, HEADER_KEY } from './schemas/common.js';
import { bearerScope } from './scopes.js';

/** Errors every operation can answer, on top of its own. */
const COMMON_ERRORS: ErrorCode[] = [
  'bad_request',
  'rate_limited',
  'key_banned',
  'service_unavailable',
];
export const BEARER_ERRORS: ErrorCode[] = [
  'missing_credentials',
  'malformed_authorization',
  'invalid_api_key',
];
export const BASIC_ERRORS: ErrorCode[] = [
  'missing_credentials',
  'malformed_authorization',
  'invalid_credentials',
];
const BODY_ERRORS: ErrorCode[] = [
  'invalid_json',
  'unsupported_content_type',
  'validation_failed',
  'payload_too_large',
];

/** A response header beyond those every answer carries, by its component's name. */
type HeaderName = 'Link' | 'Location' | 'Deprecation' | 'Sunset' | 'DeprecationLink';

/** An operation's success: its status, the schema of its body, and what the document says. */
interface Success<S extends number, R extends TSchema> {
  status: S;
  schema: R | null;
  description: string;
  headers: HeaderName[];
}

/** The success `status` answers with `schema` (null: no body, as a 204), and its headers. */
export function answer<S extends number, R extends TSchema = TNull>(
  status: S,
  schema: R | null,
  description: string,
  ...headers: HeaderName[]
): Success<S, R> {
  return { status, schema, description, headers };
}

/**
 * An operation, declared once: what the document says of it, who may call it (a bearer key
 * holding `scope`, or `auth`: the account's password, or anyone), its input, its success, the
 * errors of its own, and its route's `config` and hooks. The errors of its access and of its
 * input (a body's, or `validation_failed` for params and a query) are added to those.
 */
type Declaration<P, Q, B, S extends number, R extends TSchema> = {
  operationId: string;
  summary: string;
  description: string;
  deprecated?: true;
  params?: P;
  querystring?: Q;
  body?: B;
  success: Success<S, R>;
  errors?: ErrorCode[];
  config?: FastifyContextConfig;
  preValidation?: preValidationAsyncHookHandler;
} & ({ scope: Scope } | { auth: 'basic' | 'none' });

/**
 * A route's options made from its operation's declaration. The schema keeps the declared
 * TypeBox types, so the handler's params, query and body are typed from them, and its
 * answer is checked against the success's schema.
 */
export function operation<
  S extends number,
  R extends TSchema,
  P extends TSchema | undefined = undefined,
  Q extends TSchema | undefined = undefined,
  B extends TSchema | undefined = undefined,
>(tag: string, declared: Declaration<P, Q, B, S, R>) {
  const { success, params, querystring, body } = declared;
  const access =
    'scope' in declared
      ? { security: bearerScope(declared.scope), errors: BEARER_ERRORS }
      : declared.auth === 'basic'
        ? { security: [{ basicAuth: [] }], errors: BASIC_ERRORS }
        : { security: [], errors: [] };
  const input: ErrorCode[] = body
    ? BODY_ERRORS
    : params || querystring
      ? ['validation_failed']
      : [];
  const schema = {
    operationId: declared.operationId,
    summary: declared.summary,
    description: declared.description,
    ...(declared.deprecated && { deprecated: true }),
    tags: [tag],
    security: access.security,
    ...(params && { params }),
    ...(querystring && { querystring }),
    ...(body && { body }),
    response: {
      [success.status]: {
        ...(success.schema ?? { type: 'null' }),
        description: success.description,
        ...(success.headers.length > 0 && { headers: documentedHeaders(success.headers) }),
      },
      ...errorResponses([...COMMON_ERRORS, ...access.errors, ...input, ...(declared.errors ?? [])]),
    },
  };
  return {
    ...(declared.config && { config: declared.config }),
    ...(declared.preValidation && { preValidation: declared.preValidation }),
    schema: schema as Omit<typeof schema, 'response'> & {
      params: P;
      querystring: Q;
      body: B;
      response: { [status in S]: R };
    },
  };
}

/**
 * The response headers an operation sends beyond those every answer carries, by the names of
 * their components in the document, which describes each once. Fastify does not check
 * response headers, so this is for the document only.
 */
function documentedHeaders(names: HeaderName[]): Record<string, object> {
  return Object.fromEntries(
    names.map((name) => [
      name === 'DeprecationLink' ? 'link' : name.toLowerCase(),
      { type: 'string', [HEADER_KEY]: name },
    ]),
  );
}

/**
 * The error responses of an operation, built from the error table: one entry per status,
 * naming the codes the operation can answer with it. Each is the Error schema; the document
 * turns the codes into the response's description and examples.
 */
function errorResponses(codes: ErrorCode[]): Record<string, TSchema> {
  const responses: Record<string, TSchema> = {};
  for (const [status, list] of byStatus(['internal_error', ...codes])) {
    responses[status] = {
      ...ErrorBody,
      description: describeCodes(list),
      [ERROR_CODES_KEY]: list,
    } as TSchema;
  }
  return responses;
}

/** The lists of codes by status (as the document writes it), `codes` added to them once each. */
export function byStatus(
  codes: readonly ErrorCode[],
  lists = new Map<string, ErrorCode[]>(),
): Map<string, ErrorCode[]> {
  for (const code of codes) {
    const status = String(ERRORS[code].status);
    const list = lists.get(status) ?? [];
    if (!list.includes(code)) list.push(code);
    lists.set(status, list);
  }
  return lists;
}
