import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { callerOf } from '../http/auth.js';
import { sendFreshPage, v1Url } from '../http/links.js';
import { answer, operation } from '../http/operation.js';
import { answerOf, created, unwrap } from '../http/reply.js';
import { commit } from '../store/change.js';
import {
  changeEndpoint,
  createEndpoint,
  getEndpoint,
  listEndpointDeliveries,
  listWebhookEndpoints,
  recoverEndpoint,
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
  RecoverRequest,
  Recovery,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointList,
  WebhookEndpointWithSecret,
  WebhookParams,
  WebhookPatch,
} from './schemas.js';

/** Webhook endpoints, their tests and their delivery logs (rules in src/webhooks/domain.ts). */
export const webhookRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { config, idempotency } = app.ctx;
  const { webhooks } = app;

  app.post(
    '/webhooks',
    operation('Webhooks', {
      operationId: 'createWebhook',
      summary: 'Add a webhook endpoint',
      description:
        'Events of the types named are POSTed to the URL, signed with the secret answered ' +
        'here once (`Animal-Store-Signature`). The URL is checked now and at every delivery.',
      scope: 'webhooks:write',
      body: NewWebhook,
      success: answer(201, WebhookEndpointWithSecret, 'The endpoint, with its secret.', 'Location'),
      errors: ['webhook_url_refused', 'too_many_webhooks'],
    }),
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
    operation('Webhooks', {
      operationId: 'listWebhooks',
      summary: 'List webhook endpoints',
      description: `Every endpoint of the account (at most 16), ordered by id.`,
      scope: 'webhooks:read',
      success: answer(200, WebhookEndpointList, 'The endpoints.'),
    }),
    async (request) => listWebhookEndpoints(webhooks, callerOf(request).account.id),
  );

  app.get(
    '/webhooks/:webhookId',
    operation('Webhooks', {
      operationId: 'getWebhook',
      summary: 'Get a webhook endpoint',
      description: 'One endpoint of this account; its secret is never shown again.',
      scope: 'webhooks:read',
      params: WebhookParams,
      success: answer(200, WebhookEndpoint, 'The endpoint.'),
      errors: ['not_found'],
    }),
    async (request) =>
      unwrap(await getEndpoint(webhooks, callerOf(request).account.id, request.params.webhookId)),
  );

  app.patch(
    '/webhooks/:webhookId',
    operation('Webhooks', {
      operationId: 'updateWebhook',
      summary: 'Change a webhook endpoint',
      description: 'Its URL (checked again), its event types, or whether it is enabled.',
      scope: 'webhooks:write',
      params: WebhookParams,
      body: WebhookPatch,
      success: answer(200, WebhookEndpoint, 'The endpoint after the change.'),
      errors: ['not_found', 'webhook_url_refused'],
    }),
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
    operation('Webhooks', {
      operationId: 'deleteWebhook',
      summary: 'Remove a webhook endpoint',
      description: 'Removes it and its delivery log; nothing more is sent to it.',
      scope: 'webhooks:write',
      params: WebhookParams,
      success: answer(204, null, 'Removed.'),
      errors: ['not_found'],
    }),
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
    operation('Webhooks', {
      operationId: 'rotateWebhookSecret',
      summary: "Rotate a webhook endpoint's secret",
      description:
        'A new secret, answered this once. The previous one still signs for 24 hours: ' +
        'every delivery meanwhile carries a `v1` signature by each.',
      scope: 'webhooks:write',
      params: WebhookParams,
      success: answer(200, WebhookEndpointWithSecret, 'The endpoint, with its new secret.'),
      errors: ['not_found'],
    }),
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
    operation('Webhooks', {
      operationId: 'testWebhook',
      summary: 'Send a test event',
      description:
        'Sends a `webhook.test` event to this endpoint alone, as any event is sent (signed, ' +
        'retried); follow it in the delivery log.',
      scope: 'webhooks:write',
      params: WebhookParams,
      success: answer(202, WebhookDelivery, 'The delivery, pending.'),
      errors: ['not_found'],
    }),
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

  app.post(
    '/webhooks/:webhookId/recover',
    operation('Webhooks', {
      operationId: 'recoverWebhook',
      summary: 'Recover an endpoint',
      description:
        'After an outage: sends again every delivery to this endpoint of an event since ' +
        '`since` that failed (now, for those waiting for a retry), or with `include: all` ' +
        'every event of its types since then. ' +
        "They are sent under the dispatcher's caps (no other account waits for them); follow " +
        'them in the delivery log. The endpoint must be enabled. Up to 10,000 a call.',
      scope: 'webhooks:write',
      params: WebhookParams,
      body: RecoverRequest,
      success: answer(202, Recovery, 'Queued.'),
      errors: ['not_found', 'validation_failed', 'endpoint_disabled'],
    }),
    async (request, reply) => {
      const { account } = callerOf(request);
      const { since, include } = request.body;
      return idempotency.commit(
        request,
        reply,
        recoverEndpoint(webhooks, account.id, request.params.webhookId, {
          since,
          all: include === 'all',
        }),
        (result) => answerOf(result, (recovery) => ({ status: 202, body: recovery })),
      );
    },
  );

  app.get(
    '/webhooks/:webhookId/deliveries',
    operation('Webhooks', {
      operationId: 'listWebhookDeliveries',
      summary: 'List deliveries',
      description:
        "The endpoint's delivery log, newest event first: status, attempts, the last " +
        "answer's status and first 1 KB. Kept as long as the events (30 days).",
      scope: 'webhooks:read',
      params: WebhookParams,
      querystring: DeliveryListQuery,
      success: answer(200, DeliveryPage, 'A page of deliveries.', 'Link'),
      errors: ['invalid_cursor', 'not_found'],
    }),
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
    operation('Webhooks', {
      operationId: 'retryWebhookDelivery',
      summary: 'Send a delivery again',
      description:
        'Replays one delivery from the log now, whatever became of it (delivered, failed ' +
        'or waiting for its next attempt). The receiver may de-duplicate on the event id.',
      scope: 'webhooks:write',
      params: DeliveryParams,
      success: answer(202, WebhookDelivery, 'The delivery, pending.'),
      errors: ['not_found', 'delivery_in_progress'],
    }),
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
