import { type Clock, jittered } from '../clock.js';
import { timeOrderedBase62 } from '../domain/random.js';
import { fail, ok, type Result } from '../domain/result.js';
import { traceparentOf } from '../ops/tracing.js';
import { change, type Write } from '../store/change.js';
import type { ReadDb } from '../store/database.js';
import type { Lease } from '../store/lease.js';
import { type MessageRow, toIso } from '../store/tables.js';
import { recordEvents } from '../webhooks/events.js';
import { deliveryStatusCounts } from '../webhooks/repository.js';
import { deleteSettledMessage, findMessage, insertMessage } from './repository.js';

/** The statuses a message may have: its row's (src/store/tables.ts). */
export { MESSAGE_STATUSES } from '../store/tables.js';
export type MessageStatus = MessageRow['status'];
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
    status: row.status,
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
  /** The change that stores it: one insert. */
  change: Write<Message>;
}

/**
 * A new message, stored durably as `queued` by its change. Given a lease of
 * this process's worker, it is claimed at birth: stored under that lease and not available to
 * any other worker until the lease runs out (`available_at`), so the worker takes it from
 * memory with no claim statement. It stays `queued` until delivered, as the client is told.
 * Called by the message queues (MessageQueue.accept), which decide on the lease.
 */
export function acceptMessage(
  clock: Clock,
  accountId: string,
  text: string,
  lease?: Lease,
): AcceptedMessage {
  const at = clock.now();
  const now = at.toISOString();
  const row = {
    // Later messages sort later: the id index grows at its end (13 random characters: 77 bits).
    id: `msg_${timeOrderedBase62(at.getTime(), 13)}`,
    account_id: accountId,
    message: text,
    status: 'queued',
    // A try begins as soon as it is stored: a lease that runs out counts it, as a claim does.
    attempts: lease ? 1 : 0,
    available_at: lease?.until ?? now,
    lease_token: lease?.token ?? null,
    lease_until: lease?.until ?? null,
    failure_reason: null,
    created_at: now,
    updated_at: now,
    traceparent: traceparentOf(),
  } satisfies MessageRow;
  const message = toMessage(row);
  const change: Write<Message> = {
    options: { blind: true },
    work: async (tx) => {
      await insertMessage(tx, row);
      return message;
    },
  };
  return { message, row, change };
}

/** The resource a message's events (`message.sent`, `message.failed`) are about. */
export function messageResource(id: string): string {
  return `messages/${id}`;
}

/** Where the webhook deliveries of a message's events stand: how many of each. */
export interface WebhookDeliveryState {
  /** Not yet delivered: waiting for a first try, being sent, or waiting to be retried. */
  pending: number;
  delivered: number;
  /** Given up on after the retry period (or the endpoint was disabled). */
  failed: number;
}

export type MessageRecord = Message & { webhooks: WebhookDeliveryState };

/** A message as it stands, with the delivery state of its events to the account's webhooks. */
export async function getMessage(
  db: ReadDb,
  accountId: string,
  id: string,
): Promise<Result<MessageRecord, 'not_found'>> {
  const row = await findMessage(db, accountId, id);
  if (!row) return noMessage(id);
  const counts = await deliveryStatusCounts(db, accountId, messageResource(id));
  const count = (status: string) => counts.get(status) ?? 0;
  return ok({
    ...toMessage(row),
    webhooks: {
      pending: count('pending') + count('sending'),
      delivered: count('delivered'),
      failed: count('failed'),
    },
  });
}

const noMessage = (id: string) =>
  fail(
    'not_found',
    `No message ${id} in this account; use the id \`POST /messages\` answered with.`,
  );

/**
 * Removes a message that has settled, sent or failed: one queued or being sent is still the
 * worker's (`message_pending`). `message.deleted` carries it as it was.
 */
export function removeMessage(
  clock: Clock,
  accountId: string,
  id: string,
): Write<Result<void, 'not_found' | 'message_pending'>> {
  return change(async (tx) => {
    const removed = await deleteSettledMessage(tx, accountId, id);
    if (removed) {
      await recordEvents(tx, accountId, clock.now(), [
        { type: 'message.deleted', resource: messageResource(id), data: toMessage(removed) },
      ]);
      return ok(undefined);
    }
    const pending = await findMessage(tx, accountId, id);
    return pending
      ? fail('message_pending', `Message ${id} is ${pending.status}; remove it once it settles.`)
      : noMessage(id);
  });
}

export interface RetryPolicy {
  maxAttempts: number;
  /** Back-off before the second try; doubled before each next one. */
  retryBaseMs: number;
}

/** Exponential back-off with ±20% jitter, so retries of a burst do not land together. */
export function retryDelayMs(policy: RetryPolicy, attempt: number): number {
  return jittered(policy.retryBaseMs * 2 ** (attempt - 1));
}
