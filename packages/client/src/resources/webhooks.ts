import type { PageList } from '../pagination.js';
import type { ApiPromise } from '../response.js';
import type {
  ListWebhookDeliveriesQuery,
  NewWebhook,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointWithSecret,
  WebhookRecoverRequest,
  WebhookRecovery,
  WebhookUpdate,
} from '../types.js';
import {
  type CallOptions,
  type CreateOptions,
  created,
  nothing,
  pages,
  plain,
  type Requests,
  unwrap,
} from './context.js';

/** Webhook endpoints, their tests and their deliveries. */
export interface WebhooksResource {
  /** A new endpoint; its signing `secret` (`whsec_…`) is shown this once: keep it. */
  create(endpoint: NewWebhook, options?: CreateOptions): ApiPromise<WebhookEndpointWithSecret>;
  /** Every endpoint of the account (at most 16, one page), oldest first. */
  list(options?: CallOptions): PageList<WebhookEndpoint>;
  get(webhookId: string, options?: CallOptions): ApiPromise<WebhookEndpoint>;
  /** Changes the URL, the events, or `enabled` (enabling again forgives past failures). */
  update(
    webhookId: string,
    changes: WebhookUpdate,
    options?: CallOptions,
  ): ApiPromise<WebhookEndpoint>;
  delete(webhookId: string, options?: CallOptions): ApiPromise<void>;
  /**
   * A new signing secret, shown this once; deliveries are signed with the old one too for the
   * next 24 hours, so receivers can switch without missing one.
   */
  rotateSecret(webhookId: string, options?: CreateOptions): ApiPromise<WebhookEndpointWithSecret>;
  /** Sends a `webhook.test` event to this endpoint alone; answers its delivery, pending. */
  test(webhookId: string, options?: CreateOptions): ApiPromise<WebhookDelivery>;
  /**
   * After an outage: sends again every delivery to the endpoint of an event since `since` that
   * failed, or with `include: 'all'` every event of its types since then (up to 10,000 a call;
   * `more` says to call again). The endpoint must be enabled.
   */
  recover(
    webhookId: string,
    request: WebhookRecoverRequest,
    options?: CreateOptions,
  ): ApiPromise<WebhookRecovery>;
  /** The endpoint's deliveries, newest first, through every page. */
  deliveries(
    webhookId: string,
    query?: ListWebhookDeliveriesQuery,
    options?: CallOptions,
  ): PageList<WebhookDelivery>;
  /** Sends a delivery again now (its id is its event's); answers it, pending. */
  retry(
    webhookId: string,
    deliveryId: string,
    options?: CreateOptions,
  ): ApiPromise<WebhookDelivery>;
}

export function webhooksResource(requests: Requests): WebhooksResource {
  const { api } = requests;
  const path = (webhookId: string) => ({ params: { path: { webhookId } } });
  return {
    create: (endpoint, o) =>
      created(requests, (init) => api.POST('/webhooks', { body: endpoint, ...init }), o),
    list: (o) => pages<WebhookEndpoint>(requests, (init) => api.GET('/webhooks', init), o),
    get: (webhookId, o) =>
      unwrap(requests, api.GET('/webhooks/{webhookId}', { ...path(webhookId), ...plain(o) })),
    update: (webhookId, changes, o) =>
      unwrap(
        requests,
        api.PATCH('/webhooks/{webhookId}', { ...path(webhookId), body: changes, ...plain(o) }),
      ),
    delete: (webhookId, o) =>
      nothing(requests, api.DELETE('/webhooks/{webhookId}', { ...path(webhookId), ...plain(o) })),
    rotateSecret: (webhookId, o) =>
      created(
        requests,
        (init) => api.POST('/webhooks/{webhookId}/rotate-secret', { ...path(webhookId), ...init }),
        o,
      ),
    test: (webhookId, o) =>
      created(
        requests,
        (init) => api.POST('/webhooks/{webhookId}/test', { ...path(webhookId), ...init }),
        o,
      ),
    recover: (webhookId, request, o) =>
      created(
        requests,
        (init) =>
          api.POST('/webhooks/{webhookId}/recover', { ...path(webhookId), body: request, ...init }),
        o,
      ),
    deliveries: (webhookId, query = {}, o) =>
      pages<WebhookDelivery>(
        requests,
        (init) =>
          api.GET('/webhooks/{webhookId}/deliveries', {
            params: { path: { webhookId }, query },
            ...init,
          }),
        o,
      ),
    retry: (webhookId, deliveryId, o) =>
      created(
        requests,
        (init) =>
          api.POST('/webhooks/{webhookId}/deliveries/{deliveryId}/retry', {
            params: { path: { webhookId, deliveryId } },
            ...init,
          }),
        o,
      ),
  };
}
