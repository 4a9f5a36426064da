import type { Lease } from '../store/messages-repository.js';
import type { MessageRow } from '../store/tables.js';

/**
 * Carries accepted messages to a worker. The message row is written (and committed) first;
 * the queue only says "there is work". Backends: the database table itself (embedded) and
 * BullMQ on Redis.
 */
export interface MessageQueue {
  readonly kind: 'table' | 'bullmq';
  /**
   * A lease to accept a message under when this process's worker can take it straight from
   * memory (see `acceptMessage`); undefined when it should wait in the queue like any other.
   */
  leaseForNew(): Lease | undefined;
  /** The message's row is committed: get it to a worker. Never throws. */
  enqueued(row: MessageRow): Promise<void>;
  /** Start taking messages in this process (WORKER=on, or `animal-store worker`). */
  startWorker(): void;
  /** Stop taking messages, finish the ones in hand, release connections. Idempotent. */
  close(): Promise<void>;
}
