import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import type { Page } from '../domain/pagination.js';

/**
 * Absolute URL of a path served under `/v1`: on this deployment's configured address (the one
 * clients know) or, in development without one, on the address the request came in on.
 */
export function v1Url(config: Config, request: FastifyRequest, path: string): URL {
  const base = config.ownBaseUrl ?? `${request.protocol}://${request.host}/v1`;
  return new URL(`${base}${path}`);
}

/** Absolute URL of a quickstart messages path (no version prefix). */
export function messagesUrl(config: Config, request: FastifyRequest, path: string): URL {
  const base = config.messagesBaseUrl ?? `${request.protocol}://${request.host}`;
  return new URL(`${base}${path}`);
}

/** `Link: <…>; rel="next"` (RFC 8288), keeping the request's filters and adding the cursor. */
export function nextLink(
  config: Config,
  request: FastifyRequest,
  path: string,
  query: Record<string, string | number | undefined>,
  cursor: string,
): string {
  // Built as text (on every page of every list): the URL class costs more than the query.
  const base = config.ownBaseUrl ?? `${request.protocol}://${request.host}/v1`;
  let search = '';
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && name !== 'cursor') {
      search += `${encodeURIComponent(name)}=${encodeURIComponent(value)}&`;
    }
  }
  return `<${base}${path}?${search}cursor=${encodeURIComponent(cursor)}>; rel="next"`;
}

/** The docs page (served at the root, beside /v1), with an optional section anchor. */
export function docsUrl(config: Config, request: FastifyRequest, anchor = ''): URL {
  const origin = config.ownBaseUrl
    ? new URL(config.ownBaseUrl).origin
    : `${request.protocol}://${request.host}`;
  return new URL(`/docs${anchor}`, origin);
}

/** A page as the API answers it: the bare array, and the next page in the `Link` header. */
export function sendPage<T>(
  config: Config,
  request: FastifyRequest,
  reply: FastifyReply,
  path: string,
  page: Page<T>,
): T[] {
  if (page.nextCursor) {
    const query = request.query as Record<string, string | number | undefined>;
    reply.header('link', nextLink(config, request, path, query, page.nextCursor));
  }
  return page.items;
}
