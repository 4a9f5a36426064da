import type { ApiKey } from '../../domain/api-keys.js';
import { type Html, html } from '../../html.js';
import type { WindowState } from '../../limits/rate-limiter.js';
import { time } from './layout.js';

/** What the account's limits are doing now: read by the keys and account pages. */
export interface LimitState {
  /** The windows as they stand (empty when the counters could not be read). */
  windows: WindowState[];
  /** The account's keys banned now: key id → when the ban ends (ms). */
  bans: Map<string, number>;
}

const WINDOW_NAMES: Record<WindowState['name'], string> = {
  minute: 'this minute',
  day: 'today (UTC)',
};

/**
 * Says plainly when the account is rate limited, or a key banned, and until when; nothing when
 * all is well. A warning, announced politely (role=status): it is news, not an error of the
 * person reading.
 */
export function limitNotices(state: LimitState, keys: readonly ApiKey[]): Html {
  const used = state.windows.filter((window) => window.remaining <= 0);
  // The window that refills last is the one the requests wait for.
  const binding = used.sort((a, b) => b.resetAt - a.resetAt)[0];
  const banned = keys.filter((key) => state.bans.has(key.id));
  if (!binding && banned.length === 0) return html``;
  return html`<div class="notice warning" role="status">
${
  binding &&
  html`<p><strong>Rate limited.</strong> Your account has used all ${binding.limit} requests of
  ${WINDOW_NAMES[binding.name]}: the API answers <code>429</code> until
  ${time(new Date(binding.resetAt * 1000).toISOString())}.</p>`
}
${banned.map(
  (
    key,
  ) => html`<p><strong>Key banned.</strong> The key ${key.name ? `“${key.name}” ` : ''}(<code>${key.prefix}…</code>)
  kept sending while limited and is refused until ${time(new Date(state.bans.get(key.id) ?? 0).toISOString())}.
  Back off when you get <code>429</code>.</p>`,
)}
</div>`;
}
