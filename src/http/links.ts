import type { FastifyRequest } from 'fastify';
import type { Config } from '../config.js';

/**
 * Absolute URL of a path served under `/v1`. With PUBLIC_BASE_URL set, links use it (the
 * address clients know); otherwise the address the request came in on.
 */
export function v1Url(config: Config, request: FastifyRequest, path: string): URL {
  const base = config.publicBaseUrl ?? `${request.protocol}://${request.host}/v1`;
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
  const url = v1Url(config, request, path);
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && name !== 'cursor') url.searchParams.set(name, String(value));
  }
  url.searchParams.set('cursor', cursor);
  return `<${url.href}>; rel="next"`;
}
