import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { callerOf } from '../http/auth.js';
import { sendFreshPage } from '../http/links.js';
import { unwrap } from '../http/reply.js';
import {
  BEARER_ERRORS,
  COMMON_ERRORS,
  documentedHeaders,
  errorResponses,
} from '../http/schemas/common.js';
import { bearerScope } from '../http/scopes.js';
import { listEventPage } from './events.js';
import { EventListQuery, EventPage } from './events-schemas.js';

const tags = ['Events'];
const base = [...COMMON_ERRORS, ...BEARER_ERRORS] as const;

export const eventRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { database, clock, config } = app.ctx;

  app.get(
    '/events',
    {
      schema: {
        operationId: 'listEvents',
        summary: 'List events',
        description:
          "The account's events of the last 30 days, oldest first; the next page is in the " +
          '`Link` header. The same events webhooks deliver, for those who poll.',
        tags,
        security: bearerScope('events:read'),
        querystring: EventListQuery,
        response: {
          200: {
            ...EventPage,
            description: 'A page of events.',
            headers: documentedHeaders('Link'),
          },
          ...errorResponses(...base, 'validation_failed', 'invalid_cursor'),
        },
      },
    },
    async (request, reply) => {
      const { account } = callerOf(request);
      const page = unwrap(
        await listEventPage(database.reader, account.id, clock.now(), request.query),
      );
      return sendFreshPage(config, request, reply, '/events', page);
    },
  );
};
