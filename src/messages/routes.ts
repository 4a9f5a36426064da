import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { callerOf } from '../http/auth.js';
import { messagesUrl } from '../http/links.js';
import { unwrap } from '../http/reply.js';
import {
  BEARER_ERRORS,
  BODY_ERRORS,
  COMMON_ERRORS,
  documentedHeaders,
  errorResponses,
} from '../http/schemas/common.js';
import { bearerScope } from '../http/scopes.js';
import { getMessage } from './domain.js';
import { MessageParams, MessageRecord, NewMessage, QueuedMessage } from './schemas.js';

const tags = ['Messages'];
const base = [...COMMON_ERRORS, ...BEARER_ERRORS] as const;

/** The quickstart example: served without the /v1 prefix, as the seed places it. */
export const messageRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { database, config, idempotency } = app.ctx;
  const { queue } = app;

  app.post(
    '/messages',
    {
      schema: {
        operationId: 'sendMessage',
        summary: 'Send a message (quickstart)',
        description:
          'Stores the message and answers at once with its record, status `queued`: it is ' +
          'only queued, not yet processed. Follow `Location` (`GET /messages/{id}`) to see ' +
          'it become `sent`.',
        tags,
        security: bearerScope('messages:write'),
        body: NewMessage,
        response: {
          202: {
            ...QueuedMessage,
            description: 'Accepted and queued.',
            headers: documentedHeaders('Location'),
          },
          ...errorResponses(...base, ...BODY_ERRORS),
        },
      },
    },
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
    {
      schema: {
        operationId: 'getMessage',
        summary: 'Read a message record',
        description: 'The record now: `queued`, `processing`, `sent`, or `failed` with a reason.',
        tags,
        security: bearerScope('messages:read'),
        params: MessageParams,
        response: {
          200: { ...MessageRecord, description: 'The message record.' },
          ...errorResponses(...base, 'validation_failed', 'not_found'),
        },
      },
    },
    async (request) => {
      const { account } = callerOf(request);
      const { failureReason, ...record } = unwrap(
        await getMessage(database.reader, account.id, request.params.messageId),
      );
      return failureReason === null ? record : { ...record, failureReason };
    },
  );
};
