import type { Clock } from '../clock.js';
import type { Db } from '../store/database.js';
import { findMessage, insertMessage } from '../store/messages-repository.js';
import { type MessageRow, toIso } from '../store/tables.js';
import { randomBase62 } from './random.js';
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

/** Stores the message durably (committed before this returns), as `queued`. */
export async function acceptMessage(
  db: Db,
  clock: Clock,
  accountId: string,
  text: string,
): Promise<Message> {
  const now = clock.now().toISOString();
  const row = {
    id: `msg_${randomBase62(20)}`,
    account_id: accountId,
    message: text,
    status: 'queued',
    attempts: 0,
    available_at: now,
    lease_token: null,
    lease_until: null,
    failure_reason: null,
    created_at: now,
    updated_at: now,
  };
  await insertMessage(db, row);
  return toMessage(row);
}

export async function getMessage(
  db: Db,
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
