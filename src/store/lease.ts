import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';

/**
 * A worker's hold on the rows it claims: its token, set on them, and until when (ISO) no other
 * worker takes them; `now` is when it was taken. Rows whose worker stopped go again after it.
 */
export interface Lease {
  token: string;
  now: string;
  until: string;
}

/** A new lease, from the clock's now for `ms`. */
export function newLease(clock: Clock, ms: number): Lease {
  const now = clock.now();
  return {
    token: randomUUID(),
    now: now.toISOString(),
    until: new Date(now.getTime() + ms).toISOString(),
  };
}
