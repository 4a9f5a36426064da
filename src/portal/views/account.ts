import type { Account } from '../../domain/accounts.js';
import type { WindowState } from '../../limits/rate-limiter.js';
import { type Html, html } from '../html.js';
import { layout, type PageContext, time } from './layout.js';

export interface AccountView {
  account: Account;
  windows: WindowState[];
  deprecatedCalls: number;
  liveKeys: number;
}

const PLAN_NAMES: Record<Account['plan'], string> = {
  free: 'Free',
  pro: 'Pro',
  business: 'Business',
  enterprise: 'Enterprise',
};

const WINDOW_LABELS: Record<WindowState['name'], string> = {
  minute: 'This minute',
  day: 'Today (UTC)',
};

const number = new Intl.NumberFormat('en');

function usageBar(window: WindowState): Html {
  const id = `usage-${window.name}`;
  const resets = new Date(window.resetAt * 1000).toISOString();
  return html`<div class="usage">
  <label for="${id}">${WINDOW_LABELS[window.name]}</label>
  <meter id="${id}" min="0" max="${window.limit}" low="${window.limit * 0.75}" high="${window.limit * 0.9}" optimum="0" value="${window.used}">${window.used} of ${window.limit}</meter>
  <p class="hint">${number.format(window.used)} of ${number.format(window.limit)} requests used;
  the window starts again at ${time(resets)}.</p>
</div>`;
}

export function accountPage(context: PageContext, view: AccountView): Html {
  const { account } = view;
  return layout(
    { ...context, current: 'account' },
    'Your account',
    html`<dl class="card facts">
  <dt>Email</dt><dd>${account.email}</dd>
  <dt>Account ID</dt><dd><code>${account.id}</code></dd>
  <dt>Plan</dt><dd>${PLAN_NAMES[account.plan]}</dd>
  <dt>Created</dt><dd>${time(account.createdAt)}</dd>
  <dt>Live API keys</dt><dd>${view.liveKeys} · <a href="/portal/keys">Manage keys</a></dd>
</dl>
<section aria-labelledby="limits-title">
  <h2 id="limits-title">Rate limits and usage</h2>
  <p>The ${PLAN_NAMES[account.plan]} plan allows ${number.format(account.limits.perMinute)}
  requests per minute and ${number.format(account.limits.perDay)} per UTC day, shared by all
  your keys. Every API response carries the same figures in its <code>RateLimit</code> headers.</p>
  ${view.windows.length > 0 ? view.windows.map(usageBar) : html`<p>Usage cannot be read right now; try again in a moment.</p>`}
</section>
<section aria-labelledby="deprecated-title">
  <h2 id="deprecated-title">Deprecated calls</h2>
  <p>${number.format(view.deprecatedCalls)} ${view.deprecatedCalls === 1 ? 'call' : 'calls'} to deprecated operations so far.
  ${
    view.deprecatedCalls > 0
      ? html`Move them to their successors before the sunset date; see
  <a href="/docs/">the API docs</a>.`
      : html`Nothing to migrate.`
  }</p>
</section>`,
  );
}
