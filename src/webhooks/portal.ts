import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../errors.js';
import { formText, requireAccount, signedInAccount } from '../portal/forms.js';
import { pageContext, seeOther, sendHtml } from '../portal/render.js';
import { commit } from '../store/change.js';
import {
  createEndpoint,
  getEndpoint,
  listEndpointDeliveries,
  listWebhookEndpoints,
  recoverEndpoint,
  retryDelivery,
  sendTestEvent,
} from './domain.js';
import { type WebhooksView, webhookPage, webhooksPage } from './portal-views.js';

interface EndpointParams {
  webhookId: string;
}

const ID = /^[A-Za-z0-9_]{1,64}$/;

/** Add webhook endpoints, send test events, read the delivery log and retry (as the API). */
export async function webhookPages(app: FastifyInstance): Promise<void> {
  const { idempotency } = app.ctx;
  const { webhooks } = app;
  const signedIn = { preHandler: requireAccount };
  const form = { preValidation: app.csrfProtection, preHandler: requireAccount };

  const list = async (
    request: FastifyRequest,
    reply: FastifyReply,
    view: Omit<WebhooksView, 'endpoints'>,
    status = 200,
  ) => {
    const endpoints = await listWebhookEndpoints(webhooks, signedInAccount(request).id);
    return sendHtml(
      reply,
      webhooksPage(pageContext(request, reply), { ...view, endpoints }),
      status,
    );
  };

  const endpointOf = async (request: FastifyRequest<{ Params: EndpointParams }>) => {
    const id = request.params.webhookId;
    const found = ID.test(id)
      ? await getEndpoint(webhooks, signedInAccount(request).id, id)
      : undefined;
    if (!found?.ok) throw new ApiError('not_found', 'No webhook endpoint with this id.');
    return found.value;
  };

  app.get('/webhooks', signedIn, (request, reply) => list(request, reply, {}));

  app.post('/webhooks', form, async (request, reply) => {
    const url = formText(request.body, 'url').trim();
    const accountId = signedInAccount(request).id;
    // Once per form: a double click or a reload adds one endpoint. The secret is shown by this
    // answer alone: what is kept for the form's key says only that the endpoint was added.
    let secret: string | undefined;
    const { answer, replayed } = await idempotency.form(
      request,
      accountId,
      createEndpoint(webhooks, accountId, { url, events: ['*'] }),
      (created) => {
        if (!created.ok) return { status: 400, body: { message: created.message } };
        secret = created.value.secret;
        return { status: 201, body: { id: created.value.id } };
      },
      // Shown again to this browser's session alone.
      app.portal.sessions.csrfBinding(request),
    );
    if (answer.status !== 201) {
      const { message } = answer.body as { message: string };
      return list(request, reply, { url, urlError: message }, 400);
    }
    if (replayed || secret === undefined) {
      const text =
        `This form added the endpoint for ${url} already. Its signing secret was shown once, ` +
        'when it was added, and is not shown again: if you did not copy it, rotate the secret ' +
        '(POST /v1/webhooks/{id}/rotate-secret).';
      return list(request, reply, { notice: { kind: 'success', text } });
    }
    return list(request, reply, { created: { url, secret } }, 201);
  });

  app.get<{ Params: EndpointParams }>('/webhooks/:webhookId', signedIn, async (request, reply) => {
    const endpoint = await endpointOf(request);
    const page = await listEndpointDeliveries(webhooks, signedInAccount(request).id, endpoint.id, {
      limit: 20,
    });
    const query = request.query as Record<string, unknown>;
    const recovered = Number(query.recovered);
    const notice =
      query.sent !== undefined
        ? { kind: 'success' as const, text: 'Sent: it appears in the log below.' }
        : Number.isSafeInteger(recovered) && recovered >= 0 && query.recovered !== undefined
          ? {
              kind: 'success' as const,
              text: `${recovered} ${recovered === 1 ? 'delivery' : 'deliveries'} in line to be sent again: follow them in the log below.`,
            }
          : undefined;
    return sendHtml(
      reply,
      webhookPage(pageContext(request, reply), endpoint, page.ok ? page.value.items : [], notice),
    );
  });

  app.post<{ Params: EndpointParams }>(
    '/webhooks/:webhookId/test',
    form,
    async (request, reply) => {
      const endpoint = await endpointOf(request);
      await commit(
        webhooks.database,
        sendTestEvent(webhooks, signedInAccount(request).id, endpoint.id),
      );
      return seeOther(reply, `/portal/webhooks/${endpoint.id}?sent=1`);
    },
  );

  app.post<{ Params: EndpointParams }>(
    '/webhooks/:webhookId/recover',
    form,
    async (request, reply) => {
      const endpoint = await endpointOf(request);
      const since = formText(request.body, 'since');
      // datetime-local has no zone: the form says UTC.
      const at = /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d)?$/.test(since) ? `${since}Z` : since;
      const all = formText(request.body, 'include') === 'all';
      const recovered = await commit(
        webhooks.database,
        recoverEndpoint(webhooks, signedInAccount(request).id, endpoint.id, { since: at, all }),
      );
      if (!recovered.ok) throw new ApiError(recovered.code, recovered.message);
      return seeOther(reply, `/portal/webhooks/${endpoint.id}?recovered=${recovered.value.queued}`);
    },
  );

  app.post<{ Params: EndpointParams & { deliveryId: string } }>(
    '/webhooks/:webhookId/deliveries/:deliveryId/retry',
    form,
    async (request, reply) => {
      const endpoint = await endpointOf(request);
      const { deliveryId } = request.params;
      if (!ID.test(deliveryId)) throw new ApiError('not_found', 'No such delivery.');
      const retried = await commit(
        webhooks.database,
        retryDelivery(webhooks, signedInAccount(request).id, endpoint.id, deliveryId),
      );
      if (!retried.ok) {
        // Not "Sent": a delivery being sent now is not sent again (delivery_in_progress).
        throw retried.code === 'not_found'
          ? new ApiError('not_found', 'No such delivery.')
          : new ApiError(retried.code, retried.message);
      }
      return seeOther(reply, `/portal/webhooks/${endpoint.id}?sent=1`);
    },
  );
}
