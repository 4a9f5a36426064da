import type { Write } from '../store/change.js';
import type { Message } from './domain.js';

/**
 * Carries accepted messages to a worker. Backends: the database table itself (embedded) and
 * BullMQ on Redis. Either way the message row is written (and committed) first; the queue
 * then only says "there is work".
 */
export interface MessageQueue {
  readonly kind: 'table' | 'bullmq';
  /**
   * Accepts a message, as a change: its write stores it durably as `queued`, and once that is
   * committed its `committed` step gets it to a worker. Once the write is committed the message
   * is never lost; getting it to a worker never fails (a message Redis did not take is swept
   * to it later).
   */
  accept(accountId: string, text: string): Write<Message>;
  /** Start taking messages in this process (WORKER=on, or `animal-store worker`). */
  startWorker(): void;
  /** Stop taking messages, finish the ones in hand, release connections. Idempotent. */
  close(): Promise<void>;
}
