import { breakable, type Html, html } from '../html.js';
import {
  csrfField,
  field,
  layout,
  type Notice,
  noticeBlock,
  onceField,
  type PageContext,
  time,
} from '../portal/views/layout.js';
import type { WebhookDelivery, WebhookEndpoint } from './domain.js';

export interface WebhooksView {
  endpoints: WebhookEndpoint[];
  /** The endpoint just created, with its secret: on this page and nowhere else, ever. */
  created?: { url: string; secret: string };
  notice?: Notice;
  url?: string;
  urlError?: string;
}

function state(endpoint: WebhookEndpoint): Html {
  if (endpoint.enabled) return html`Enabled`;
  return endpoint.disabledReason
    ? html`<strong>Disabled by the service:</strong> ${endpoint.disabledReason}`
    : html`Disabled`;
}

function endpointRow(endpoint: WebhookEndpoint): Html {
  return html`<tr>
  <td data-label="URL"><a href="/portal/webhooks/${endpoint.id}"><code>${breakable(endpoint.url)}</code></a></td>
  <td data-label="Events">${endpoint.events.join(', ')}</td>
  <td data-label="State">${state(endpoint)}</td>
  <td data-label="Created">${time(endpoint.createdAt)}</td>
</tr>`;
}

export function webhooksPage(context: PageContext, view: WebhooksView): Html {
  const table =
    view.endpoints.length === 0
      ? html`<p>No endpoints yet.</p>`
      : html`<div class="table-wrap stacks"><table>
  <caption>Endpoints</caption>
  <thead><tr><th scope="col">URL</th><th scope="col">Events</th><th scope="col">State</th><th scope="col">Created</th></tr></thead>
  <tbody>${view.endpoints.map(endpointRow)}</tbody>
</table></div>`;
  return layout(
    { ...context, current: 'webhooks' },
    'Webhooks',
    html`${noticeBlock(view.notice)}${
      view.created &&
      html`<section class="card created" aria-labelledby="created-title">
  <h2 id="created-title">Your new endpoint</h2>
  <p>Events go to <code>${breakable(view.created.url)}</code>, signed with this secret. <strong>Copy it
  now:</strong> it is shown this once.</p>
  <div class="field">
    <label for="new-secret">Signing secret</label>
    <div class="copy-row">
      <input id="new-secret" type="text" readonly value="${view.created.secret}" spellcheck="false">
      <button type="button" data-copy="new-secret">Copy</button>
    </div>
    <p class="copy-status" role="status" aria-live="polite"></p>
  </div>
</section>`
    }
<p>Every event of your account (pets, orders, messages) is POSTed as JSON to each endpoint,
signed in the <code>Animal-Store-Signature</code> header, and retried for 3 days.</p>
<form method="post" action="/portal/webhooks" class="card inline" novalidate>
  ${csrfField(context.csrf)}
  ${onceField()}
  ${field({
    name: 'url',
    label: 'Endpoint URL',
    hint: 'An https address that accepts POST requests.',
    value: view.url,
    maxLength: 2048,
    error: view.urlError,
  })}
  <button type="submit">Add endpoint</button>
</form>
${table}`,
    { wide: true },
  );
}

function deliveryRow(endpointId: string, csrf: string, delivery: WebhookDelivery): Html {
  return html`<tr>
  <td data-label="Event" class="id"><code>${delivery.id}</code></td>
  <td data-label="Type">${delivery.eventType}</td>
  <td data-label="Status">${delivery.status}</td>
  <td data-label="Attempts" class="number">${delivery.attempts}</td>
  <td data-label="Last answer" class="number">${delivery.lastStatusCode ?? '—'}</td>
  <td data-label="Last attempt">${time(delivery.lastAttemptAt)}</td>
  <td class="row-actions"><form method="post" action="/portal/webhooks/${endpointId}/deliveries/${delivery.id}/retry">
    ${csrfField(csrf)}
    <button type="submit" class="link" aria-label="Send ${delivery.id} again">Retry</button>
  </form></td>
</tr>`;
}

/** The recovery form's first time: a day ago, to the minute, as datetime-local writes it. */
const recoverDefault = () => new Date(Date.now() - 24 * 60 * 60 * 1000).toISOString().slice(0, 16);

export function webhookPage(
  context: PageContext,
  endpoint: WebhookEndpoint,
  deliveries: WebhookDelivery[],
  notice?: Notice,
): Html {
  const log =
    deliveries.length === 0
      ? html`<p>No deliveries yet.</p>`
      : html`<div class="table-wrap stacks"><table>
  <caption>Latest deliveries</caption>
  <thead><tr><th scope="col">Event</th><th scope="col">Type</th><th scope="col">Status</th><th scope="col" class="number">Attempts</th><th scope="col" class="number">Last answer</th><th scope="col">Last attempt</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
  <tbody>${deliveries.map((d) => deliveryRow(endpoint.id, context.csrf, d))}</tbody>
</table></div>`;
  return layout(
    { ...context, current: 'webhooks' },
    'Webhook endpoint',
    html`${noticeBlock(notice)}
<p><code>${breakable(endpoint.url)}</code>: ${endpoint.events.join(', ')}. ${state(endpoint)}.</p>
<form method="post" action="/portal/webhooks/${endpoint.id}/test" class="card inline">
  ${csrfField(context.csrf)}
  <button type="submit">Send a test event</button>
</form>
${
  endpoint.enabled
    ? html`<form method="post" action="/portal/webhooks/${endpoint.id}/recover" class="card">
  ${csrfField(context.csrf)}
  <p>Back after an outage? Send again what failed while it was down.</p>
  <label>Since (UTC, within the last 30 days)
    <input type="datetime-local" name="since" required value="${recoverDefault()}"></label>
  <label class="choice"><input type="checkbox" name="include" value="all"> Every event of its
  types since then, not only those that failed</label>
  <p><button type="submit">Recover</button></p>
</form>`
    : ''
}
${log}
<p><a href="/portal/webhooks">All endpoints</a></p>`,
    { wide: true },
  );
}
