import { type Account, PASSWORD_MIN_LENGTH } from '../../domain/accounts.js';
import type { ApiKey } from '../../domain/api-keys.js';
import { type Html, html } from '../../html.js';
import type { WindowState } from '../../limits/rate-limiter.js';
import type { KeyKind } from './keys.js';
import { csrfField, field, layout, noticeBlock, type PageContext, time } from './layout.js';
import { type LimitState, limitNotices } from './limits.js';

/** The password form's state after a post: what went wrong, or that it worked. */
export interface PasswordForm {
  errors?: { current?: string; next?: string };
  /** A refusal of the whole form (too many tries). */
  notice?: string;
  done?: string;
}

export interface AccountView {
  account: Account;
  limits: LimitState;
  deprecatedCalls: number;
  keys: readonly ApiKey[];
  kind: KeyKind;
  password: PasswordForm;
  /** What the capabilities tell the account, each with the page to act on it. */
  notices: ReadonlyArray<{ text: string; href: string }>;
}

function passwordSection(context: PageContext, form: PasswordForm): Html {
  const notice = form.done
    ? { kind: 'success' as const, text: form.done }
    : form.notice
      ? { kind: 'error' as const, text: form.notice }
      : undefined;
  return html`<section aria-labelledby="password-title">
  <h2 id="password-title">Password</h2>
  ${noticeBlock(notice)}
  <form method="post" action="/portal/account/password" class="card" novalidate>
    ${csrfField(context.csrf)}
    ${field({
      name: 'current_password',
      label: 'Current password',
      type: 'password',
      autocomplete: 'current-password',
      required: true,
      error: form.errors?.current,
    })}
    ${field({
      name: 'new_password',
      label: 'New password',
      type: 'password',
      autocomplete: 'new-password',
      required: true,
      minLength: PASSWORD_MIN_LENGTH,
      hint: `At least ${PASSWORD_MIN_LENGTH} characters. Every other browser signed in to this account is signed out; your API keys keep working.`,
      error: form.errors?.next,
    })}
    <button type="submit">Change password</button>
  </form>
</section>`;
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
    html`${view.notices.map(
      (notice) =>
        html`<p class="notice error" role="alert">${notice.text} <a href="${notice.href}">See it</a></p>`,
    )}<dl class="card facts">
  <dt>Email</dt><dd>${account.email}</dd>
  <dt>Account ID</dt><dd><code>${account.id}</code></dd>
  <dt>Plan</dt><dd>${PLAN_NAMES[account.plan]}</dd>
  <dt>Created</dt><dd>${time(account.createdAt)}</dd>
  <dt>${view.kind} API keys</dt><dd>${view.keys.length} · <a href="/portal/keys">Manage keys</a></dd>
</dl>
${limitNotices(view.limits, view.keys)}
<section aria-labelledby="limits-title">
  <h2 id="limits-title">Rate limits and usage</h2>
  <p>The ${PLAN_NAMES[account.plan]} plan allows ${number.format(account.limits.perMinute)}
  requests per minute and ${number.format(account.limits.perDay)} per UTC day, shared by all
  your keys. Every API response carries the same figures in its <code>RateLimit</code> headers.</p>
  ${view.limits.windows.length > 0 ? view.limits.windows.map(usageBar) : html`<p>Usage cannot be read right now; try again in a moment.</p>`}
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
</section>
${
  view.kind === 'Test'
    ? html`<section aria-labelledby="sandbox-title">
  <h2 id="sandbox-title">Test data</h2>
  <p>Start again from an empty catalogue, or from a sample one: remove this account's pets,
  categories, orders, messages and events, keeping its keys and webhook endpoints.</p>
  <p><a href="/portal/sandbox">Reset test data…</a></p>
</section>`
    : ''
}
${passwordSection(context, view.password)}`,
  );
}
