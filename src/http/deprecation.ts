import type { FastifyReply, FastifyRequest } from 'fastify';
import { type Deprecation, isRemoved, recordDeprecatedCall } from '../domain/deprecations.js';
import { ApiError } from '../errors.js';
import { commit } from '../store/change.js';
import { callerOf } from './auth.js';
import type { AppContext } from './context.js';
import { docsUrl, v1Url } from './links.js';

/**
 * A route hook for a deprecated operation. Until its sunset it announces the deprecation on
 * every answer and counts the call for the account; from the sunset instant on (read from the
 * clock on each request, so no deploy is needed) it answers 410 and nothing else.
 */
export function deprecated(ctx: AppContext, deprecation: Deprecation) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const now = ctx.clock.now();
    const successor = `<${v1Url(ctx.config, request, deprecation.successorPath(request.params as Record<string, unknown>)).href}>; rel="successor-version"`;
    if (isRemoved(deprecation, now)) {
      const day = deprecation.sunsetAt.toISOString().slice(0, 10);
      throw new ApiError(
        'endpoint_removed',
        `This operation was removed on ${day}; use ${deprecation.successor}.`,
        undefined,
        { link: successor },
      );
    }
    const notice = docsUrl(ctx.config, request, '#deprecations').href;
    reply.headers({
      deprecation: `@${Math.floor(deprecation.deprecatedAt.getTime() / 1000)}`,
      sunset: deprecation.sunsetAt.toUTCString(),
      link: `${successor}, <${notice}>; rel="deprecation"; type="text/html"`,
    });
    ctx.metrics.deprecatedCall(deprecation.operationId);
    const accountId = callerOf(request).account.id;
    await commit(ctx.database, {
      work: (tx) => recordDeprecatedCall(tx, accountId, deprecation, now),
      options: { blind: true },
    });
  };
}
