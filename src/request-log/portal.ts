import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { BoundedCache } from '../bounded-cache.js';
import { type ApiKey, listApiKeys } from '../domain/api-keys.js';
import { ApiError } from '../errors.js';
import { docsUrl } from '../http/links.js';
import { requireAccount, signedInAccount } from '../portal/forms.js';
import { pageContext, sendHtml } from '../portal/render.js';
import { getRequestEntry, listRequestPage, REQUEST_LOG_OFF, requestStats } from './domain.js';
import {
  type KeyLabels,
  type RequestFilters,
  requestLogOffPage,
  requestPage,
  requestsPage,
} from './portal-views.js';

const KEY_ID = /^key_[A-Za-z0-9]{1,64}$/;
const REQUEST_ID = /^[\w.-]{1,128}$/;

interface ListQuery {
  errors?: string;
  key?: string;
  cursor?: string;
}

/** A session refused past its account's limits: the refusal, and until when (ms). */
interface Refused {
  error: ApiError;
  untilMs: number;
}

/** Keys as the pages name them: the name a person gave, and the prefix that tells it apart. */
function keyLabels(keys: readonly ApiKey[]): KeyLabels {
  return keys.map((key) => ({
    id: key.id,
    label: key.name ? `${key.name} (${key.prefix}…)` : `${key.prefix}…`,
  }));
}

/** Sessions refused at once, at most: past it, the oldest are read and counted again. */
const REFUSED_SESSIONS = 10_000;

/**
 * The account's request log: the 7-day chart, the list with filters, and one entry. Each page
 * is counted against the account's limits as the API's reads of the log are (a refusal is the
 * portal's error page, `429`), so a browser reads the log no faster than a key can. A session
 * refused is refused again, until its `Retry-After`, before its session is read or anything is
 * counted: a browser that keeps asking while refused costs the instance as little as a key does.
 */
export async function requestPages(app: FastifyInstance): Promise<void> {
  const { database, clock, config } = app.ctx;
  const refused = new BoundedCache<string, Refused>('portal refusals', {
    maxEntries: REFUSED_SESSIONS,
  });
  app.ctx.metrics.watch(() => [refused]);
  const stillRefused = (request: FastifyRequest): ApiError | undefined => {
    const cookie = app.portal.sessions.cookieOf(request);
    const now = clock.now().getTime();
    const held = cookie === undefined ? undefined : refused.get(cookie, (r) => r.untilMs > now);
    if (held === undefined) return undefined;
    const seconds = String(Math.ceil((held.untilMs - now) / 1000));
    return new ApiError(held.error.code, held.error.message, undefined, { 'retry-after': seconds });
  };
  const counted = async (request: FastifyRequest, reply: FastifyReply) => {
    const account = signedInAccount(request);
    const subject = { id: account.id, banId: `portal:${account.id}` };
    try {
      await app.rateLimitGuard.charge(request, reply, subject, account.limits);
    } catch (err) {
      const cookie = app.portal.sessions.cookieOf(request);
      if (err instanceof ApiError && err.status === 429 && cookie !== undefined) {
        const seconds = Number(err.headers?.['retry-after'] ?? 1);
        refused.set(cookie, { error: err, untilMs: clock.now().getTime() + seconds * 1000 });
      }
      throw err;
    }
  };
  const signedIn = {
    preHandler: async (request: FastifyRequest, reply: FastifyReply) => {
      const refusal = stillRefused(request);
      if (refusal) throw refusal;
      await requireAccount(request, reply);
      if (!reply.sent) await counted(request, reply);
    },
  };
  const errorsDocs = (request: FastifyRequest) =>
    docsUrl(config, request, '#description/errors').href;

  app.get<{ Querystring: ListQuery }>('/requests', signedIn, async (request, reply) => {
    if (!config.requestLog.enabled) {
      return sendHtml(reply, requestLogOffPage(pageContext(request, reply), REQUEST_LOG_OFF));
    }
    const accountId = signedInAccount(request).id;
    const query = request.query ?? {};
    const filters: RequestFilters = {
      errorsOnly: query.errors === '1',
      ...(typeof query.key === 'string' && KEY_ID.test(query.key) && { keyId: query.key }),
    };
    const now = clock.now();
    const [stats, page, keys] = await Promise.all([
      requestStats(database.reader, accountId, now, '7d'),
      listRequestPage(database.reader, accountId, now, {
        limit: 50,
        cursor: typeof query.cursor === 'string' ? query.cursor : undefined,
        status: filters.errorsOnly ? 'errors' : undefined,
        keyId: filters.keyId,
      }),
      listApiKeys(database.reader, accountId),
    ]);
    if (!page.ok) throw new ApiError('invalid_cursor', page.message);
    const next =
      page.value.nextCursor &&
      `/portal/requests?${new URLSearchParams({
        ...(filters.errorsOnly && { errors: '1' }),
        ...(filters.keyId && { key: filters.keyId }),
        cursor: page.value.nextCursor,
      })}`;
    return sendHtml(
      reply,
      requestsPage(pageContext(request, reply), {
        stats,
        entries: page.value.items,
        filters,
        keys: keyLabels(keys),
        ...(next && { next }),
        errorsDocs: errorsDocs(request),
      }),
    );
  });

  app.get<{ Params: { requestId: string } }>(
    '/requests/:requestId',
    signedIn,
    async (request, reply) => {
      if (!config.requestLog.enabled) throw new ApiError('not_found', REQUEST_LOG_OFF);
      const id = request.params.requestId;
      const accountId = signedInAccount(request).id;
      const [found, keys] = await Promise.all([
        REQUEST_ID.test(id)
          ? getRequestEntry(database.reader, accountId, clock.now(), id)
          : undefined,
        listApiKeys(database.reader, accountId),
      ]);
      if (!found?.ok) throw new ApiError('not_found', 'No request with this id in your log.');
      return sendHtml(
        reply,
        requestPage(pageContext(request, reply), found.value, errorsDocs(request), keyLabels(keys)),
      );
    },
  );
}
