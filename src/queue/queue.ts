import type { Message } from '../domain/messages.js';
import type { Alongside } from '../store/alongside.js';

/**
 * Carries accepted messages to a worker. Backends: the database table itself (embedded) and
 * BullMQ on Redis. Either way the message row is written (and committed) first; the queue
 * then only says "there is work".
 */
export interface MessageQueue {
  readonly kind: 'table' | 'bullmq';
  /**
   * Accepts a message: stores it durably as `queued` (committed before this resolves) and
   * gets it to a worker. Once this resolves the message is never lost; getting it to a worker
   * never fails the call (a message Redis did not take is swept to it later). `alongside`
   * commits with the message (a POST's kept answer).
   */
  accept(accountId: string, text: string, alongside?: Alongside<Message>): Promise<Message>;
  /** Start taking messages in this process (WORKER=on, or `animal-store worker`). */
  startWorker(): void;
  /** Stop taking messages, finish the ones in hand, release connections. Idempotent. */
  close(): Promise<void>;
}
