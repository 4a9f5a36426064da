import type { ApiKey } from '../../domain/api-keys.js';
import { isScope, READ_ONLY_SCOPES, SCOPE_RESOURCES, type Scope } from '../../domain/scopes.js';
import { type Html, html } from '../../html.js';
import {
  csrfField,
  field,
  layout,
  type Notice,
  noticeBlock,
  onceField,
  type PageContext,
  time,
} from './layout.js';
import { type LimitState, limitNotices } from './limits.js';

export type KeyKind = 'Test' | 'Live';

/** The kind of key this deployment issues, named as the portal heads its list. */
export function keyKind(prefix: string): KeyKind {
  return prefix === 'as_live_' ? 'Live' : 'Test';
}

export interface NewKey {
  name: string | null;
  secret: string;
  /** A publishable key's origins. */
  origins?: readonly string[];
}

export interface KeysView {
  keys: ApiKey[];
  /** "Test" (as_test_ keys: development and staging) or "Live" (as_live_: production). */
  kind: KeyKind;
  /** Whether the account is limited, or a key banned, now. */
  limits: LimitState;
  /** The key just created: its secret is on this page and nowhere else, ever. */
  created?: NewKey;
  /** The catalogue's base address, for the example call. */
  apiBase: string;
  notice?: Notice;
  nameError?: string;
  name?: string;
  /** The access the form was sent with, shown again when it is refused; null when the access
   * sent was not one of the form's (then none is shown chosen). Left out: full access. */
  access?: KeyAccess | null;
  scopes?: readonly Scope[];
  /** An access or scope value that is not one the form offers. */
  accessError?: string;
  scopesError?: string;
  /** The origins written for a publishable key, shown again when refused, and why. */
  origins?: string;
  originsError?: string;
}

/** The key form's choice: full access, every resource's `read`, the scopes ticked, or a
 * publishable key for the origins written. */
export type KeyAccess = 'full' | 'read' | 'custom' | 'publishable';

function createdPanel(created: NewKey, apiBase: string): Html {
  // A publishable key is sent from a page of one of its origins.
  const origin = created.origins?.[0];
  const command = [
    html`curl -H "Authorization: Bearer ${created.secret}"`,
    ...(origin === undefined ? [] : [html`-H "Origin: ${origin}"`]),
    html`${apiBase}/pets`,
  ];
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
  <pre class="command" tabindex="0"><code>${command.map((part, i) => html`${i > 0 ? ' \\\n  ' : ''}${part}`)}</code></pre>
</section>`;
}

function keyRow(key: ApiKey, bannedUntil: number | undefined): Html {
  // data-label: the column's name, shown beside each value where the table is stacked (narrow
  // screens, public/portal/portal.css).
  return html`<tr>
  <td data-label="Name">${key.name ?? html`<span class="muted">(no name)</span>`}${
    bannedUntil !== undefined &&
    html` <span class="badge warning">Banned until ${time(new Date(bannedUntil).toISOString())}</span>`
  }</td>
  <td data-label="Key"><code>${key.prefix}…</code></td>
  <td data-label="Access">${
    key.allowedOrigins === null
      ? scopesText(key.scopes)
      : html`Publishable: reads the catalogue from ${key.allowedOrigins.map(
          (origin, i) => html`${i > 0 ? ', ' : ''}<code>${origin}</code>`,
        )}`
  }</td>
  <td data-label="Created">${time(key.createdAt)}</td>
  <td data-label="Last used">${time(key.lastUsedAt)}</td>
  <td class="row-actions"><a href="/portal/keys/${key.id}/revoke" aria-label="Revoke key ${key.name ?? key.prefix}">Revoke</a></td>
</tr>`;
}

/** A key's scopes as its row shows them: a read-only key as the form named it. */
function scopesText(scopes: readonly Scope[] | null): Html {
  if (scopes === null) return html`Full access`;
  if (sameScopes(scopes, READ_ONLY_SCOPES)) return html`Read only`;
  return html`${scopes.map((scope, i) => html`${i > 0 ? ', ' : ''}<code>${scope}</code>`)}`;
}

function sameScopes(a: readonly Scope[], b: readonly Scope[]): boolean {
  return a.length === b.length && a.every((scope) => b.includes(scope));
}

/** Full access (the default), read only, or the scopes ticked in the table. */
function accessFieldset(view: KeysView): Html {
  const access = view.access === undefined ? 'full' : view.access;
  const ticked = new Set<string>(view.scopes ?? []);
  const option = (value: KeyAccess, label: string, hint: string) =>
    html`<label class="choice"><input type="radio" name="access" value="${value}"${
      access === value ? html` checked` : ''
    }> ${label} <span class="hint">${hint}</span></label>`;
  // A resource without a write operation has no write box: nothing could use it.
  const box = (scope: string, label: string) =>
    isScope(scope)
      ? html`<td><label class="choice"><input type="checkbox" name="scope" value="${scope}"${
          ticked.has(scope) ? html` checked` : ''
        }> <span class="visually-hidden">${scope.split(':')[0]} </span>${label}</label></td>`
      : html`<td class="muted"><span aria-hidden="true">—</span><span class="visually-hidden">no ${label}</span></td>`;
  const described = [view.accessError && 'access-error', view.scopesError && 'scopes-error']
    .filter(Boolean)
    .join(' ');
  return html`<fieldset class="access"${described ? html` aria-describedby="${described}"` : ''}>
  <legend>Access</legend>
  ${option('full', 'Full access', 'everything the account can do')}
  ${option('read', 'Read only', 'reads every resource, changes nothing')}
  ${option('custom', 'Only the scopes ticked below', 'write implies read')}
  ${option('publishable', 'Publishable', 'for a web page: reads the catalogue, from the origins below')}
  ${view.accessError && html`<p class="field-error" id="access-error">${view.accessError}</p>`}
  ${view.scopesError && html`<p class="field-error" id="scopes-error">${view.scopesError}</p>`}
  <div class="table-wrap"><table class="scopes">
    <thead><tr><th scope="col">Resource</th><th scope="col">Read</th><th scope="col">Write</th></tr></thead>
    <tbody>${SCOPE_RESOURCES.map(
      (resource) =>
        html`<tr><th scope="row">${resource}</th>${box(`${resource}:read`, 'read')}${box(
          `${resource}:write`,
          'write',
        )}</tr>`,
    )}</tbody>
  </table></div>
  ${field({
    name: 'origins',
    label: 'Origins of a publishable key',
    hint: 'The pages that will use it, separated by spaces, such as “https://shop.example”.',
    value: view.origins,
    maxLength: 2_100,
    error: view.originsError,
  })}
</fieldset>`;
}

function keyTable(view: KeysView): Html {
  const { keys, kind } = view;
  if (keys.length === 0) {
    return html`<p>No ${kind.toLowerCase()} keys. Create one to call the API.</p>`;
  }
  return html`<div class="table-wrap stacks"><table>
  <caption>${kind} keys</caption>
  <thead><tr><th scope="col">Name</th><th scope="col">Key</th><th scope="col">Access</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
  <tbody>${keys.map((key) => keyRow(key, view.limits.bans.get(key.id)))}</tbody>
</table></div>`;
}

export function keysPage(context: PageContext, view: KeysView): Html {
  return layout(
    { ...context, current: 'keys' },
    'API keys',
    html`${noticeBlock(view.notice)}
${limitNotices(view.limits, view.keys)}
${view.created && createdPanel(view.created, view.apiBase)}
<p>Send a key as <code>Authorization: Bearer &lt;API_KEY&gt;</code>. Keys share the account's
rate limits. A key with full access reaches the whole account; give a key only the scopes it
needs, and a call outside them is refused (<code>403 insufficient_scope</code>). A publishable
key is for web pages: it reads the catalogue from the origins it lists, with limits of its
own.</p>
<form method="post" action="/portal/keys" class="card inline" novalidate>
  ${csrfField(context.csrf)}
  ${onceField()}
  ${field({
    name: 'name',
    label: 'Name (optional)',
    hint: 'Where the key is used, such as “CI” or “shop backend”.',
    value: view.name,
    maxLength: 100,
    error: view.nameError,
  })}
  ${accessFieldset(view)}
  <button type="submit">Create key</button>
</form>
${keyTable(view)}`,
    { wide: true },
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
