import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ApiError } from '../errors.js';
import { callerOf } from '../http/auth.js';
import { sendFreshPage } from '../http/links.js';
import { answer, operation } from '../http/operation.js';
import { unwrap } from '../http/reply.js';
import { getRequestEntry, listRequestPage, REQUEST_LOG_OFF, requestStats } from './domain.js';
import {
  RequestListQuery,
  RequestLogEntry,
  RequestLogPage,
  RequestParams,
  RequestStats,
  StatsQuery,
} from './schemas.js';

/** Reading the log is not logged (src/request-log/writer.ts). */
const config = { requestLog: false } as const;

/** The account's request log (rules in src/request-log/domain.ts). */
export const requestRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { database, clock } = app.ctx;
  // A server that keeps no log says so, after the caller is known and counted.
  if (!app.ctx.config.requestLog.enabled) {
    app.addHook('preHandler', (_request, _reply, done) => {
      done(new ApiError('not_found', REQUEST_LOG_OFF));
    });
  }

  app.get(
    '/requests',
    operation('Requests', {
      operationId: 'listRequests',
      summary: 'List requests',
      description:
        "The account's API requests of the last 7 days (at most 10,000), newest first, " +
        'whatever their answer; the next page is in the `Link` header. A request shows ' +
        'here within a second of its answer. Reading the log is not logged.',
      scope: 'requests:read',
      config,
      querystring: RequestListQuery,
      success: answer(200, RequestLogPage, 'A page of requests.', 'Link'),
      errors: ['invalid_cursor', 'not_found'],
    }),
    async (request, reply) => {
      const { account } = callerOf(request);
      const page = unwrap(
        await listRequestPage(database.reader, account.id, clock.now(), request.query),
      );
      return sendFreshPage(app.ctx.config, request, reply, '/requests', page);
    },
  );

  app.get(
    '/requests/stats',
    operation('Requests', {
      operationId: 'getRequestStats',
      summary: 'Count requests per hour',
      description:
        "The account's API requests per hour over the last 7 days (`period=7d`, the " +
        'default) or 24 hours, split into 2xx, 4xx, 5xx and 429; the current hour is the ' +
        'last, and still counting.',
      scope: 'requests:read',
      config,
      querystring: StatsQuery,
      success: answer(200, RequestStats, 'The counts.'),
      errors: ['not_found'],
    }),
    async (request) =>
      requestStats(
        database.reader,
        callerOf(request).account.id,
        clock.now(),
        request.query.period ?? '7d',
      ),
  );

  app.get(
    '/requests/:requestId',
    operation('Requests', {
      operationId: 'getRequest',
      summary: 'Get a request',
      description:
        'One request of the account, by its `X-Request-Id`; for a 4xx or 5xx answer, with ' +
        'its request body (redacted, at most 4 KB) and the Error answered.',
      scope: 'requests:read',
      config,
      params: RequestParams,
      success: answer(200, RequestLogEntry, 'The request.'),
      errors: ['not_found'],
    }),
    async (request) =>
      unwrap(
        await getRequestEntry(
          database.reader,
          callerOf(request).account.id,
          clock.now(),
          request.params.requestId,
        ),
      ),
  );
};
