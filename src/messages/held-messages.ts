import type { Clock } from '../clock.js';
import type { MessageRow } from '../store/tables.js';
import type { MessageProcessor } from './processor.js';
import type { Lease } from './repository.js';

/** Messages accepted within this long share a lease, so they settle in one statement. */
const LEASE_SHARED_MS = 1_000;
/** Messages held in memory at most, in batches' worth: each waits only for the ones before it,
 * far less than its lease. Past it, messages go the queue's other way. */
const HELD_BATCHES = 4;

/**
 * The messages a process accepts while its worker runs, claimed at birth under the worker's
 * lease (acceptMessage) and handed to it in memory, with no claim statement and no job, by
 * both queues (docs/decisions/0040-message-delivery.md). A process that dies holding them
 * leaves leases that run out; the rows are then claimed again.
 */
export class HeldMessages {
  private readonly rows: MessageRow[] = [];
  private lease: { value: Lease; issuedMs: number } | undefined;

  constructor(
    private readonly processor: MessageProcessor,
    private readonly clock: Clock,
    /** Messages the worker takes at once. */
    private readonly batch: number,
  ) {}

  /** A lease to accept a new message under when the worker can take it from memory soon (else
   * undefined: the message goes the queue's other way). */
  leaseForNew(): Lease | undefined {
    if (this.rows.length >= this.batch * HELD_BATCHES) return undefined;
    const nowMs = this.clock.now().getTime();
    if (
      !this.lease ||
      nowMs - this.lease.issuedMs >= LEASE_SHARED_MS ||
      nowMs < this.lease.issuedMs
    ) {
      this.lease = { value: this.processor.newLease(), issuedMs: nowMs };
    }
    return this.lease.value;
  }

  /** A message committed under a lease of `leaseForNew`. */
  hold(row: MessageRow): void {
    this.rows.push(row);
  }

  /** The next batch to deliver, oldest first. */
  take(max = this.batch): MessageRow[] {
    return this.rows.splice(0, max);
  }

  get size(): number {
    return this.rows.length;
  }
}
