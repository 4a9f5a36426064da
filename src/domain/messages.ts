import type { Clock } from '../clock.js';
import type { ReadDb, Tx } from '../store/database.js';
import { findMessage, insertMessage, type Lease } from '../store/messages-repository.js';
import { type MessageRow, toIso } from '../store/tables.js';
import { timeOrderedBase62 } from './random.js';
import { fail, ok, type Result } from './result.js';

/** queued → processing → sent, or back to queued for a retry, or failed after the last try. */
export const MESSAGE_STATUSES = ['queued', 'processing', 'sent', 'failed'] as const;
export type MessageStatus = (typeof MESSAGE_STATUSES)[number];
export const MESSAGE_MAX_LENGTH = 4096;

export interface Message {
  id: string;
  message: string;
  status: MessageStatus;
  createdAt: string;
  updatedAt: string;
  /** Why delivery failed, once the message is `failed`. */
  failureReason: string | null;
}

export function toMessage(row: MessageRow): Message {
  return {
    id: row.id,
    message: row.message,
    status: row.status as MessageStatus,
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
    failureReason: row.failure_reason,
  };
}

export interface AcceptedMessage {
  /** What the client is answered: accepted, and queued for delivery. */
  message: Message;
  /** The row as stored, for the queue. */
  row: MessageRow;
}

/**
 * Stores the message durably (committed before this returns), as `queued`; or, given a lease
 * of this process's worker, as already `processing` under it (claimed at birth: the worker
 * takes it from memory, with no claim statement, and no other worker can take it before the
 * lease runs out). Either way the client is told `queued`: the message is accepted, not sent.
 * One statement changes data (its route's write is `oneStatement`: keep it so).
 */
export async function acceptMessage(
  tx: Tx,
  clock: Clock,
  accountId: string,
  text: string,
  lease?: Lease,
): Promise<AcceptedMessage> {
  const at = clock.now();
  const now = at.toISOString();
  const row = {
    // Later messages sort later: the id index grows at its end (13 random characters: 77 bits).
    id: `msg_${timeOrderedBase62(at.getTime(), 13)}`,
    account_id: accountId,
    message: text,
    status: lease ? 'processing' : 'queued',
    attempts: lease ? 1 : 0,
    available_at: now,
    lease_token: lease?.token ?? null,
    lease_until: lease?.until ?? null,
    failure_reason: null,
    created_at: now,
    updated_at: now,
  };
  await insertMessage(tx, row);
  return { message: { ...toMessage(row), status: 'queued' }, row: row satisfies MessageRow };
}

export async function getMessage(
  db: ReadDb,
  accountId: string,
  id: string,
): Promise<Result<Message, 'not_found'>> {
  const row = await findMessage(db, accountId, id);
  return row ? ok(toMessage(row)) : fail('not_found', `No message ${id} in this account.`);
}

export interface RetryPolicy {
  maxAttempts: number;
  /** Back-off before the second try; doubled before each next one. */
  retryBaseMs: number;
}

/** Exponential back-off with ±20% jitter, so retries of a burst do not land together. */
export function retryDelayMs(policy: RetryPolicy, attempt: number): number {
  const delay = policy.retryBaseMs * 2 ** (attempt - 1);
  return Math.round(delay * (0.8 + Math.random() * 0.4));
}
