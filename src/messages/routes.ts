import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { callerOf } from '../http/auth.js';
import { messagesUrl } from '../http/links.js';
import { answer, operation } from '../http/operation.js';
import { unwrap } from '../http/reply.js';
import { commit } from '../store/change.js';
import { getMessage, removeMessage } from './domain.js';
import { MessageParams, MessageRecord, NewMessage, QueuedMessage } from './schemas.js';

/** The quickstart example: served without the /v1 prefix, as the seed places it. */
export const messageRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { database, clock, config, idempotency } = app.ctx;
  const { queue } = app;

  app.post(
    '/messages',
    operation('Messages', {
      operationId: 'sendMessage',
      summary: 'Send a message (quickstart)',
      description:
        'Stores the message and answers at once with its record, status `queued`: it is ' +
        'only queued, not yet processed. Follow `Location` (`GET /messages/{id}`) to see ' +
        'it become `sent`.',
      scope: 'messages:write',
      body: NewMessage,
      success: answer(202, QueuedMessage, 'Accepted and queued.', 'Location'),
    }),
    async (request, reply) => {
      const { account } = callerOf(request);
      return idempotency.commit(
        request,
        reply,
        queue.accept(account.id, request.body.message),
        ({ id, message, status, createdAt }) => ({
          status: 202,
          body: { id, message, status, createdAt },
          location: messagesUrl(config, request, `/messages/${id}`).href,
        }),
      );
    },
  );

  app.get(
    '/messages/:messageId',
    operation('Messages', {
      operationId: 'getMessage',
      summary: 'Read a message record',
      description: 'The record now: `queued`, `processing`, `sent`, or `failed` with a reason.',
      scope: 'messages:read',
      params: MessageParams,
      success: answer(200, MessageRecord, 'The message record.'),
      errors: ['not_found'],
    }),
    async (request) => {
      const { account } = callerOf(request);
      const { failureReason, ...record } = unwrap(
        await getMessage(database.reader, account.id, request.params.messageId),
      );
      return failureReason === null ? record : { ...record, failureReason };
    },
  );

  app.delete(
    '/messages/:messageId',
    operation('Messages', {
      operationId: 'deleteMessage',
      summary: 'Remove a message record',
      description:
        'Removes the record of a message that has settled (`sent` or `failed`) for good. ' +
        "One still `queued` or `processing` is the worker's until it settles.",
      scope: 'messages:write',
      params: MessageParams,
      success: answer(204, null, 'Removed.'),
      errors: ['not_found', 'message_pending'],
    }),
    async (request, reply) => {
      const { account } = callerOf(request);
      unwrap(await commit(database, removeMessage(clock, account.id, request.params.messageId)));
      return reply.code(204).send(null);
    },
  );
};
