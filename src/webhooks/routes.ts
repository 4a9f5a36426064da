import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { callerOf } from '../http/auth.js';
import { sendFreshPage, v1Url } from '../http/links.js';
import { answerOf, created, unwrap } from '../http/reply.js';
import {
  BEARER_ERRORS,
  BODY_ERRORS,
  COMMON_ERRORS,
  documentedHeaders,
  errorResponses,
} from '../http/schemas/common.js';
import { bearerScope } from '../http/scopes.js';
import { commit } from '../store/change.js';
import {
  changeEndpoint,
  createEndpoint,
  getEndpoint,
  listEndpointDeliveries,
  listWebhookEndpoints,
  removeEndpoint,
  retryDelivery,
  rotateSecret,
  sendTestEvent,
} from './domain.js';
import {
  DeliveryListQuery,
  DeliveryPage,
  DeliveryParams,
  NewWebhook,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointList,
  WebhookEndpointWithSecret,
  WebhookParams,
  WebhookPatch,
} from './schemas.js';

const tags = ['Webhooks'];
const base = [...COMMON_ERRORS, ...BEARER_ERRORS] as const;

/** Webhook endpoints, their tests and their delivery logs (rules in src/webhooks/domain.ts). */
export const webhookRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { config, idempotency } = app.ctx;
  const { webhooks } = app;

  app.post(
    '/webhooks',
    {
      schema: {
        operationId: 'createWebhook',
        summary: 'Add a webhook endpoint',
        description:
          'Events of the types named are POSTed to the URL, signed with the secret answered ' +
          'here once (`Animal-Store-Signature`). The URL is checked now and at every delivery.',
        tags,
        security: bearerScope('webhooks:write'),
        body: NewWebhook,
        response: {
          201: {
            ...WebhookEndpointWithSecret,
            description: 'The endpoint, with its secret.',
            headers: documentedHeaders('Location'),
          },
          ...errorResponses(...base, ...BODY_ERRORS, 'webhook_url_refused', 'too_many_webhooks'),
        },
      },
    },
    async (request, reply) => {
      const { account } = callerOf(request);
      return idempotency.commit(
        request,
        reply,
        createEndpoint(webhooks, account.id, request.body),
        (result) =>
          answerOf(result, (endpoint) =>
            created(endpoint, v1Url(config, request, `/webhooks/${endpoint.id}`)),
          ),
      );
    },
  );

  app.get(
    '/webhooks',
    {
      schema: {
        operationId: 'listWebhooks',
        summary: 'List webhook endpoints',
        description: `Every endpoint of the account (at most 16), ordered by id.`,
        tags,
        security: bearerScope('webhooks:read'),
        response: {
          200: {
            ...WebhookEndpointList,
            description: 'The endpoints.',
          },
          ...errorResponses(...base),
        },
      },
    },
    async (request) => listWebhookEndpoints(webhooks, callerOf(request).account.id),
  );

  app.get(
    '/webhooks/:webhookId',
    {
      schema: {
        operationId: 'getWebhook',
        summary: 'Get a webhook endpoint',
        description: 'One endpoint of this account; its secret is never shown again.',
        tags,
        security: bearerScope('webhooks:read'),
        params: WebhookParams,
        response: {
          200: { ...WebhookEndpoint, description: 'The endpoint.' },
          ...errorResponses(...base, 'validation_failed', 'not_found'),
        },
      },
    },
    async (request) =>
      unwrap(await getEndpoint(webhooks, callerOf(request).account.id, request.params.webhookId)),
  );

  app.patch(
    '/webhooks/:webhookId',
    {
      schema: {
        operationId: 'updateWebhook',
        summary: 'Change a webhook endpoint',
        description: 'Its URL (checked again), its event types, or whether it is enabled.',
        tags,
        security: bearerScope('webhooks:write'),
        params: WebhookParams,
        body: WebhookPatch,
        response: {
          200: { ...WebhookEndpoint, description: 'The endpoint after the change.' },
          ...errorResponses(...base, ...BODY_ERRORS, 'not_found', 'webhook_url_refused'),
        },
      },
    },
    async (request) =>
      unwrap(
        await commit(
          webhooks.database,
          await changeEndpoint(
            webhooks,
            callerOf(request).account.id,
            request.params.webhookId,
            request.body,
          ),
        ),
      ),
  );

  app.delete(
    '/webhooks/:webhookId',
    {
      schema: {
        operationId: 'deleteWebhook',
        summary: 'Remove a webhook endpoint',
        description: 'Removes it and its delivery log; nothing more is sent to it.',
        tags,
        security: bearerScope('webhooks:write'),
        params: WebhookParams,
        response: {
          204: { type: 'null', description: 'Removed.' },
          ...errorResponses(...base, 'validation_failed', 'not_found'),
        },
      },
    },
    async (request, reply) => {
      unwrap(
        await commit(
          webhooks.database,
          removeEndpoint(callerOf(request).account.id, request.params.webhookId),
        ),
      );
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/webhooks/:webhookId/rotate-secret',
    {
      schema: {
        operationId: 'rotateWebhookSecret',
        summary: "Rotate a webhook endpoint's secret",
        description:
          'A new secret, answered this once. The previous one still signs for 24 hours: ' +
          'every delivery meanwhile carries a `v1` signature by each.',
        tags,
        security: bearerScope('webhooks:write'),
        params: WebhookParams,
        response: {
          200: { ...WebhookEndpointWithSecret, description: 'The endpoint, with its new secret.' },
          ...errorResponses(...base, 'validation_failed', 'not_found'),
        },
      },
    },
    async (request, reply) => {
      const { account } = callerOf(request);
      return idempotency.commit(
        request,
        reply,
        rotateSecret(webhooks, account.id, request.params.webhookId),
        (result) => answerOf(result, (endpoint) => ({ status: 200, body: endpoint })),
      );
    },
  );

  app.post(
    '/webhooks/:webhookId/test',
    {
      schema: {
        operationId: 'testWebhook',
        summary: 'Send a test event',
        description:
          'Sends a `webhook.test` event to this endpoint alone, as any event is sent (signed, ' +
          'retried); follow it in the delivery log.',
        tags,
        security: bearerScope('webhooks:write'),
        params: WebhookParams,
        response: {
          202: { ...WebhookDelivery, description: 'The delivery, pending.' },
          ...errorResponses(...base, 'validation_failed', 'not_found'),
        },
      },
    },
    async (request, reply) => {
      const { account } = callerOf(request);
      return idempotency.commit(
        request,
        reply,
        sendTestEvent(webhooks, account.id, request.params.webhookId),
        (result) => answerOf(result, (delivery) => ({ status: 202, body: delivery })),
      );
    },
  );

  app.get(
    '/webhooks/:webhookId/deliveries',
    {
      schema: {
        operationId: 'listWebhookDeliveries',
        summary: 'List deliveries',
        description:
          "The endpoint's delivery log, newest event first: status, attempts, the last " +
          "answer's status and first 1 KB. Kept as long as the events (30 days).",
        tags,
        security: bearerScope('webhooks:read'),
        params: WebhookParams,
        querystring: DeliveryListQuery,
        response: {
          200: {
            ...DeliveryPage,
            description: 'A page of deliveries.',
            headers: documentedHeaders('Link'),
          },
          ...errorResponses(...base, 'validation_failed', 'invalid_cursor', 'not_found'),
        },
      },
    },
    async (request, reply) => {
      const { webhookId } = request.params;
      const page = unwrap(
        await listEndpointDeliveries(
          webhooks,
          callerOf(request).account.id,
          webhookId,
          request.query,
        ),
      );
      return sendFreshPage(config, request, reply, `/webhooks/${webhookId}/deliveries`, page);
    },
  );

  app.post(
    '/webhooks/:webhookId/deliveries/:deliveryId/retry',
    {
      schema: {
        operationId: 'retryWebhookDelivery',
        summary: 'Send a delivery again',
        description:
          'Replays one delivery from the log now, whatever became of it (delivered, failed ' +
          'or waiting for its next attempt). The receiver may de-duplicate on the event id.',
        tags,
        security: bearerScope('webhooks:write'),
        params: DeliveryParams,
        response: {
          202: { ...WebhookDelivery, description: 'The delivery, pending.' },
          ...errorResponses(...base, 'validation_failed', 'not_found', 'delivery_in_progress'),
        },
      },
    },
    async (request, reply) => {
      const { account } = callerOf(request);
      const { webhookId, deliveryId } = request.params;
      return idempotency.commit(
        request,
        reply,
        retryDelivery(webhooks, account.id, webhookId, deliveryId),
        (result) => answerOf(result, (delivery) => ({ status: 202, body: delivery })),
      );
    },
  );
};
