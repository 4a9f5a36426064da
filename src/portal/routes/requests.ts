import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { listApiKeys } from '../../domain/api-keys.js';
import {
  getRequestEntry,
  listRequestPage,
  REQUEST_LOG_OFF,
  requestStats,
} from '../../domain/request-log.js';
import { ApiError } from '../../errors.js';
import { docsUrl } from '../../http/links.js';
import { requireAccount, signedInAccount } from '../forms.js';
import { pageContext, sendHtml } from '../render.js';
import {
  type RequestFilters,
  requestLogOffPage,
  requestPage,
  requestsPage,
} from '../views/requests.js';

const KEY_ID = /^key_[A-Za-z0-9]{1,64}$/;
const REQUEST_ID = /^[\w.-]{1,128}$/;

interface ListQuery {
  errors?: string;
  key?: string;
  cursor?: string;
}

/**
 * The account's request log: the 7-day chart, the list with filters, and one entry. Each page
 * is counted against the account's limits as the API's reads of the log are (a refusal is the
 * portal's error page, `429`), so a browser reads the log no faster than a key can.
 */
export async function requestPages(app: FastifyInstance): Promise<void> {
  const { database, clock, config } = app.ctx;
  const counted = async (request: FastifyRequest, reply: FastifyReply) => {
    const account = signedInAccount(request);
    const subject = { id: account.id, banId: `portal:${account.id}` };
    await app.rateLimitGuard.charge(request, reply, subject, account.limits);
  };
  const signedIn = {
    preHandler: async (request: FastifyRequest, reply: FastifyReply) => {
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
        keys: keys.map((key) => ({
          id: key.id,
          label: key.name ? `${key.name} (${key.prefix}…)` : `${key.prefix}…`,
        })),
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
      const found = REQUEST_ID.test(id)
        ? await getRequestEntry(database.reader, signedInAccount(request).id, clock.now(), id)
        : undefined;
      if (!found?.ok) throw new ApiError('not_found', 'No request with this id in your log.');
      return sendHtml(
        reply,
        requestPage(pageContext(request, reply), found.value, errorsDocs(request)),
      );
    },
  );
}
