import { ERRORS, type ErrorCode } from '../errors.js';
import { breakable, type Html, html } from '../html.js';
import { layout, type PageContext, time } from '../portal/views/layout.js';
import type { RequestLogEntry, RequestLogEntryDetail, RequestStats } from './domain.js';
import { requestsChart } from './portal-chart.js';

/** The list's filters, as the page's form sends them (a GET: the address is the view). */
export interface RequestFilters {
  errorsOnly: boolean;
  keyId?: string;
}

export interface RequestsView {
  stats: RequestStats;
  entries: RequestLogEntry[];
  filters: RequestFilters;
  /** The account's live keys, for the key filter and to name each entry's. */
  keys: KeyLabels;
  /** The next page's address, when there is one. */
  next?: string;
  /** The docs page's errors section. */
  errorsDocs: string;
}

function statusBadge(status: number): Html {
  const kind =
    status >= 500 ? 'server' : status === 429 ? 'limited' : status >= 400 ? 'client' : 'ok';
  return html`<span class="status status-${kind}">${status}</span>`;
}

function codeLink(code: string | null, errorsDocs: string): Html {
  if (code === null) return html``;
  return html`<a href="${errorsDocs}" title="${ERRORS[code as ErrorCode]?.description ?? ''}"><code>${code}</code></a>`;
}

/** A duration as people read it: 2.9 ms, 31 ms. */
function duration(ms: number): string {
  return `${ms < 10 ? ms.toFixed(1) : Math.round(ms)} ms`;
}

/** The account's live keys as the pages name them: their name and prefix. */
export type KeyLabels = Array<{ id: string; label: string }>;

/**
 * Who sent a request, as a person knows the key: its name (the id kept in the log beside it,
 * where `withId`); a key no longer live is a revoked one, known by its id alone.
 */
function sender(keyId: string | null, keys: KeyLabels, withId: boolean): Html {
  if (keyId === null) return html`<span class="muted">email and password</span>`;
  const label = keys.find((key) => key.id === keyId)?.label;
  if (label === undefined)
    return html`<span class="muted">a revoked key</span> <code>${keyId}</code>`;
  return withId
    ? html`${label} <span class="muted">· <code>${keyId}</code></span>`
    : html`${label}`;
}

function entryRow(entry: RequestLogEntry, view: RequestsView): Html {
  const { errorsDocs } = view;
  return html`<tr>
  <td data-label="When">${time(entry.createdAt)}</td>
  <td data-label="Request"><a href="/portal/requests/${encodeURIComponent(entry.id)}"><code>${entry.method} ${breakable(entry.path)}</code></a></td>
  <td data-label="Status">${statusBadge(entry.status)} ${codeLink(entry.errorCode, errorsDocs)}</td>
  <td data-label="Key">${sender(entry.keyId, view.keys, false)}</td>
  <td data-label="Time" class="number">${duration(entry.durationMs)}</td>
</tr>`;
}

function filterForm(view: RequestsView): Html {
  const { filters } = view;
  return html`<form method="get" action="/portal/requests" class="card inline filters">
  <label class="choice"><input type="checkbox" name="errors" value="1"${filters.errorsOnly ? html` checked` : ''}> Errors only (4xx and 5xx)</label>
  <div class="field">
    <label for="key">Key</label>
    <select id="key" name="key">
      <option value="">Every key</option>
      ${view.keys.map(
        (key) =>
          html`<option value="${key.id}"${filters.keyId === key.id ? html` selected` : ''}>${key.label}</option>`,
      )}
    </select>
  </div>
  <button type="submit">Show</button>
</form>`;
}

/** The page on a server that keeps no request log (REQUEST_LOG=off). */
export function requestLogOffPage(context: PageContext, message: string): Html {
  return layout({ ...context, current: 'requests' }, 'Requests', html`<p>${message}</p>`);
}

export function requestsPage(context: PageContext, view: RequestsView): Html {
  const { entries } = view;
  return layout(
    { ...context, current: 'requests' },
    'Requests',
    html`${requestsChart(view.stats.hours, 'API requests, last 7 days')}
<p>Your API requests of the last 7 days (at most 10,000), newest first: each shows here within
a second of its answer. The log is for finding out what happened; a crash of the service may
lose its last fraction of a second, so it is not a record.</p>
${filterForm(view)}
${
  entries.length === 0
    ? html`<p>No requests${view.filters.errorsOnly || view.filters.keyId ? ' match these filters' : ' yet'}.</p>`
    : html`<div class="table-wrap stacks"><table>
  <caption>Requests</caption>
  <thead><tr><th scope="col">When</th><th scope="col">Request</th><th scope="col">Status</th><th scope="col">Key</th><th scope="col" class="number">Time</th></tr></thead>
  <tbody>${entries.map((entry) => entryRow(entry, view))}</tbody>
</table></div>`
}
${view.next && html`<p><a href="${view.next}">Older requests</a></p>`}`,
    { wide: true },
  );
}

export function requestPage(
  context: PageContext,
  entry: RequestLogEntryDetail,
  errorsDocs: string,
  keys: KeyLabels,
): Html {
  const meaning = entry.errorCode ? ERRORS[entry.errorCode as ErrorCode]?.description : undefined;
  return layout(
    { ...context, current: 'requests' },
    `${entry.method} ${entry.path}`,
    html`<p><a href="/portal/requests">All requests</a></p>
<dl class="facts">
  <dt>Request id</dt><dd><code>${entry.id}</code></dd>
  <dt>When</dt><dd>${time(entry.createdAt)}</dd>
  <dt>Operation</dt><dd><code>${entry.method} ${breakable(entry.route ?? entry.path)}</code></dd>
  <dt>Status</dt><dd>${statusBadge(entry.status)} ${codeLink(entry.errorCode, errorsDocs)}</dd>
  <dt>Key</dt><dd>${sender(entry.keyId, keys, true)}</dd>
  <dt>Time</dt><dd>${duration(entry.durationMs)}</dd>
  <dt>Client</dt><dd><code>${entry.clientAddress}</code></dd>
  ${entry.traceId !== null && html`<dt>Trace</dt><dd><code>${entry.traceId}</code></dd>`}
  ${entry.idempotencyKey !== null && html`<dt>Idempotency-Key</dt><dd><code>${entry.idempotencyKey}</code>${entry.replayed ? ' (replayed)' : ''}</dd>`}
</dl>
${
  entry.errorBody &&
  html`<section class="card" aria-labelledby="error-title">
  <h2 id="error-title">The error</h2>
  ${meaning && html`<p>${meaning} <a href="${errorsDocs}">What the codes mean</a></p>`}
  <pre><code>${JSON.stringify(entry.errorBody, null, 2)}</code></pre>
</section>`
}
${
  entry.requestBody !== null &&
  html`<section class="card" aria-labelledby="body-title">
  <h2 id="body-title">The request body</h2>
  <p class="hint">Fields named like secrets (password, secret, key, token) are redacted before
  anything is kept${entry.requestBodyTruncated ? '; cut at 4 KB' : ''}.</p>
  <pre><code>${entry.requestBody}</code></pre>
</section>`
}`,
  );
}
