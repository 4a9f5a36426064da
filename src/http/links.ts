import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import type { Page } from '../domain/pagination.js';
import type { AppContext } from './context.js';
import type { AnsweredPage } from './page-cache.js';

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

/** A validated query parameter: one value, or a list of them. */
type QueryValue = string | number | ReadonlyArray<string | number> | undefined;

/** `Link: <…>; rel="next"` (RFC 8288), keeping the request's filters and adding the cursor. */
export function nextLink(
  config: Config,
  request: FastifyRequest,
  path: string,
  query: Record<string, QueryValue>,
  cursor: string,
): string {
  // Built as text (on every page of every list): the URL class costs more than the query.
  const base = config.ownBaseUrl ?? `${request.protocol}://${request.host}/v1`;
  let search = '';
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined || name === 'cursor') continue;
    // A list (`?id=1&id=7`) is the parameter repeated.
    for (const one of Array.isArray(value) ? value : [value]) {
      search += `${encodeURIComponent(name)}=${encodeURIComponent(one)}&`;
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

/**
 * A page as the API answers it: the bare array, and the next page in the `Link` header. Pages
 * go through the page cache, by account and URL (and, where links are built on the request's
 * address, that address too), under the versions `Freshness` gives for the caller's data. A
 * kept page is answered at once, without a promise.
 */
export function sendPage<T>(
  { config, pages, freshness }: Pick<AppContext, 'config' | 'pages' | 'freshness'>,
  request: FastifyRequest,
  reply: FastifyReply,
  accountId: string,
  path: string,
  load: () => Promise<Page<T>>,
): void | Promise<void> {
  const origin = config.ownBaseUrl ? '' : `${request.protocol}://${request.host}`;
  const key = `${accountId} ${origin}${request.url}`;
  const versions = freshness.dataVersions(request, accountId);
  const kept = versions === undefined ? undefined : pages.get(key, versions);
  if (kept) {
    answerPage(reply, kept);
    return;
  }
  return load().then(({ items, nextCursor }) => {
    const query = request.query as Record<string, QueryValue>;
    const page: AnsweredPage = {
      // The route's response serializer (fast-json-stringify) makes the text, once.
      body: Buffer.from(reply.serialize(items) as string),
      link: nextCursor ? nextLink(config, request, path, query, nextCursor) : undefined,
    };
    if (versions !== undefined && freshness.keeps(request, accountId, versions, page)) {
      pages.keep(key, versions, page);
    }
    answerPage(reply, page);
  });
}

function answerPage(reply: FastifyReply, page: AnsweredPage): void {
  if (page.link) reply.header('link', page.link);
  // Bytes go out as they are: no serializer, no second encoding.
  reply.header('content-type', 'application/json; charset=utf-8').send(page.body);
}

/**
 * A page read afresh (lists the page cache does not keep: events, deliveries, which change
 * without the writes it is told of): the bare array, the next page in the `Link` header.
 */
export function sendFreshPage<T>(
  config: Config,
  request: FastifyRequest,
  reply: FastifyReply,
  path: string,
  { items, nextCursor }: Page<T>,
): FastifyReply {
  if (nextCursor) {
    reply.header(
      'link',
      nextLink(config, request, path, request.query as Record<string, QueryValue>, nextCursor),
    );
  }
  return reply.send(items);
}
