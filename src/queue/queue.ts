/**
 * Carries accepted messages to a worker. The message row is written (and committed) first;
 * the queue only says "there is work". Backends: the database table itself (embedded) and
 * BullMQ on Redis.
 */
export interface MessageQueue {
  readonly kind: 'table' | 'bullmq';
  /** The row of message `id` is committed: get it to a worker. Never throws. */
  enqueued(id: string): Promise<void>;
  /** Start taking messages in this process (WORKER=on, or `animal-store worker`). */
  startWorker(): void;
  /** Stop taking messages, finish the ones in hand, release connections. Idempotent. */
  close(): Promise<void>;
}
