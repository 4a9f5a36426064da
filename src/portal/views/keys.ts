import type { ApiKey } from '../../domain/api-keys.js';
import { type Html, html } from '../html.js';
import {
  csrfField,
  field,
  layout,
  type Notice,
  noticeBlock,
  type PageContext,
  time,
} from './layout.js';

export interface NewKey {
  name: string | null;
  secret: string;
}

export interface KeysView {
  keys: ApiKey[];
  /** The key just created: its secret is on this page and nowhere else, ever. */
  created?: NewKey;
  /** The catalogue's base address, for the example call. */
  apiBase: string;
  notice?: Notice;
  nameError?: string;
  name?: string;
}

function createdPanel(created: NewKey, apiBase: string): Html {
  return html`<section class="card created" aria-labelledby="created-title">
  <h2 id="created-title">Your new key${created.name ? html` “${created.name}”` : ''}</h2>
  <p><strong>Copy it now.</strong> It is shown this once; we keep only a hash of it.</p>
  <div class="field">
    <label for="new-key">Secret key</label>
    <div class="copy-row">
      <input id="new-key" type="text" readonly value="${created.secret}" spellcheck="false">
      <button type="button" data-copy="new-key">Copy</button>
    </div>
    <p class="copy-status" role="status" aria-live="polite"></p>
  </div>
  <p>Try it:</p>
  <pre><code>curl -H "Authorization: Bearer ${created.secret}" ${apiBase}/pets</code></pre>
</section>`;
}

function keyRow(key: ApiKey): Html {
  return html`<tr>
  <td>${key.name ?? html`<span class="muted">(no name)</span>`}</td>
  <td><code>${key.prefix}…</code></td>
  <td>${time(key.createdAt)}</td>
  <td>${time(key.lastUsedAt)}</td>
  <td><a href="/portal/keys/${key.id}/revoke" aria-label="Revoke key ${key.name ?? key.prefix}">Revoke</a></td>
</tr>`;
}

function keyTable(keys: ApiKey[]): Html {
  if (keys.length === 0) return html`<p>No live keys. Create one to call the API.</p>`;
  return html`<div class="table-wrap"><table>
  <caption>Live keys</caption>
  <thead><tr><th scope="col">Name</th><th scope="col">Key</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
  <tbody>${keys.map(keyRow)}</tbody>
</table></div>`;
}

export function keysPage(context: PageContext, view: KeysView): Html {
  return layout(
    { ...context, current: 'keys' },
    'API keys',
    html`${noticeBlock(view.notice)}
${view.created && createdPanel(view.created, view.apiBase)}
<p>Send a key as <code>Authorization: Bearer &lt;API_KEY&gt;</code>. Every key reaches the
whole account and shares its rate limits.</p>
<form method="post" action="/portal/keys" class="card inline" novalidate>
  ${csrfField(context.csrf)}
  ${field({
    name: 'name',
    label: 'Name (optional)',
    hint: 'Where the key is used, such as “CI” or “shop backend”.',
    value: view.name,
    maxLength: 100,
    error: view.nameError,
  })}
  <button type="submit">Create key</button>
</form>
${keyTable(view.keys)}`,
  );
}

export function revokePage(context: PageContext, key: ApiKey): Html {
  const label = key.name ? `“${key.name}” (${key.prefix}…)` : `${key.prefix}…`;
  return layout(
    { ...context, current: 'keys' },
    'Revoke key',
    html`<form method="post" action="/portal/keys/${key.id}/revoke" class="card">
  ${csrfField(context.csrf)}
  <p>Revoke the key ${label}? Anything still using it gets <code>401</code> from its next
  request on. This cannot be undone.</p>
  <div class="actions">
    <button type="submit" class="danger">Revoke key</button>
    <a href="/portal/keys">Cancel</a>
  </div>
</form>`,
  );
}
