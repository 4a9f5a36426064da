import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { callerOf } from '../http/auth.js';
import { sendFreshPage } from '../http/links.js';
import { answer, operation } from '../http/operation.js';
import { unwrap } from '../http/reply.js';
import { listEventPage } from './events.js';
import { EventListQuery, EventPage } from './events-schemas.js';

export const eventRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { database, clock, config } = app.ctx;

  app.get(
    '/events',
    operation('Events', {
      operationId: 'listEvents',
      summary: 'List events',
      description:
        "The account's events of the last 30 days, oldest first; the next page is in the " +
        '`Link` header. The same events webhooks deliver, for those who poll.',
      scope: 'events:read',
      querystring: EventListQuery,
      success: answer(200, EventPage, 'A page of events.', 'Link'),
      errors: ['invalid_cursor'],
    }),
    async (request, reply) => {
      const { account } = callerOf(request);
      const page = unwrap(
        await listEventPage(database.reader, account.id, clock.now(), request.query),
      );
      return sendFreshPage(config, request, reply, '/events', page);
    },
  );
};
