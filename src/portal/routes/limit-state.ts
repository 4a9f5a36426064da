import type { Account } from '../../domain/accounts.js';
import type { ApiKey } from '../../domain/api-keys.js';
import type { RateLimiter } from '../../limits/rate-limiter.js';
import type { Outages } from '../../ops/outages.js';
import type { LimitState } from '../views/limits.js';

/**
 * The account's windows and its keys' bans as they stand, counting nothing (looking at a page
 * costs no quota). When the counters cannot be read (Redis away), the page says nothing of
 * limits rather than fail.
 */
export async function limitState(
  limiter: RateLimiter,
  outages: Outages,
  account: Account,
  keys: readonly ApiKey[],
): Promise<LimitState> {
  try {
    const [windows, bans] = await Promise.all([
      limiter.usage(account.id, account.limits),
      limiter.bans(
        account.id,
        keys.map((key) => key.id),
      ),
    ]);
    return { windows, bans };
  } catch (err) {
    outages.failed('redis', err);
    return { windows: [], bans: new Map() };
  }
}
