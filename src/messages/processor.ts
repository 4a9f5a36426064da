import { SpanKind } from '@opentelemetry/api';
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import type { Outages } from '../ops/outages.js';
import { NO_TRACING, type Tracing } from '../ops/tracing.js';
import type { Database } from '../store/database.js';
import { type Lease, newLease } from '../store/lease.js';
import type { MessageRow } from '../store/tables.js';
import { eventRow, recordEvents } from '../webhooks/events.js';
import { messageResource, type RetryPolicy, retryDelayMs, toMessage } from './domain.js';
import { claimDue, claimOne, settle, settleSent } from './repository.js';
import type { MessageSink } from './sink.js';

export interface ProcessorOptions extends RetryPolicy {
  /** How long a worker holds a claimed message before others may take it over. */
  leaseMs: number;
}

export type Outcome =
  | { status: 'sent' }
  | { status: 'retry'; availableAt: Date; attempt: number }
  | { status: 'failed' }
  | { status: 'lost' };

/**
 * The one way a message is processed, whichever queue carries it: claim the row under a lease,
 * deliver to the sink, then settle the row (sent, retry later, or failed) only if the lease is
 * still ours. The row's conditional claim is what makes a message go out once even when two
 * workers, or a queue's duplicate job, reach it together.
 */
export class MessageProcessor {
  constructor(
    private readonly database: Database,
    private readonly clock: Clock,
    private readonly sink: MessageSink,
    private readonly options: ProcessorOptions,
    private readonly log: FastifyBaseLogger,
    private readonly outages: Outages,
    /** Told every outcome (the metrics). */
    private readonly observe: (outcome: Outcome) => void = () => {},
    private readonly tracing: Tracing = NO_TRACING,
  ) {}

  /** A new lease, from now for the configured time. */
  newLease(): Lease {
    return newLease(this.clock, this.options.leaseMs);
  }

  /** Claims, settles and accepted messages share commits (group commit, Database.write). */
  claimDue(limit: number): Promise<MessageRow[]> {
    const lease = this.newLease();
    return this.database.write((tx) => claimDue(tx, lease, limit));
  }

  claim(id: string): Promise<MessageRow | undefined> {
    const lease = this.newLease();
    return this.database.write((tx) => claimOne(tx, id, lease), { blind: true });
  }

  async process(row: MessageRow): Promise<Outcome> {
    const [outcome] = await this.processBatch([row]);
    return outcome ?? this.lost(row);
  }

  /**
   * Delivers claimed messages side by side, then settles them: every delivery that succeeded
   * in one statement per lease (a claim takes its whole batch under one), the others one by
   * one, to retry later or as failed. Outcomes are in the order of `rows`.
   */
  async processBatch(rows: MessageRow[]): Promise<Outcome[]> {
    const deliveries = await Promise.all(rows.map((row) => this.deliver(row)));
    const now = this.clock.now();
    // Messages of several accounts settle together: each event in its own account.
    const sentByLease = new Map<string, MessageRow[]>();
    rows.forEach((row, i) => {
      if (deliveries[i] !== undefined) return;
      const token = row.lease_token ?? '';
      const sent = sentByLease.get(token);
      if (sent) sent.push(row);
      else sentByLease.set(token, [row]);
    });
    const settled = new Set<string>();
    for (const [token, sent] of sentByLease) {
      try {
        // The settle and its events: one statement on PostgreSQL, decided on nothing read.
        const done = await this.database.write(
          (tx) =>
            settleSent(
              tx,
              sent.map((row) => ({
                id: row.id,
                event: eventRow(tx, row.account_id, now, messageEvent(row, 'sent', now, null)),
              })),
              token,
              now.toISOString(),
            ),
          { blind: true },
        );
        for (const id of done) settled.add(id);
      } catch (err) {
        // The failed deliveries below still settle; these go out again when their lease ends.
        this.outages.logUnlessAway(err, 'message worker: settling sent messages failed', {
          messages: sent.length,
        });
      }
    }
    const outcomes = await Promise.all(
      rows.map((row, i) => {
        const failure = deliveries[i];
        if (failure === undefined) {
          return settled.has(row.id) ? ({ status: 'sent' } as const) : this.lost(row);
        }
        return this.failed(row, failure.error, now);
      }),
    );
    for (const outcome of outcomes) this.observe(outcome);
    return outcomes;
  }

  /**
   * Hands the message to the sink: undefined when it took it, else what went wrong. With traces
   * on, each attempt is a span of the trace of the request that sent the message.
   */
  private async deliver(row: MessageRow): Promise<{ error: unknown } | undefined> {
    try {
      await this.tracing.inSpan(
        'message delivery',
        {
          kind: SpanKind.CONSUMER,
          attributes: {
            'animal_store.account_id': row.account_id,
            'animal_store.message_id': row.id,
            'animal_store.attempt': row.attempts,
          },
        },
        () => this.sink.deliver({ ...toMessage(row), status: 'processing' }, row.account_id),
        row.traceparent,
      );
      return undefined;
    } catch (error) {
      return { error };
    }
  }

  /** A delivery that failed: tried again later, or failed for good after the last attempt. */
  private async failed(row: MessageRow, error: unknown, now: Date): Promise<Outcome> {
    const token = row.lease_token ?? '';
    const reason = error instanceof Error ? error.message : String(error);
    if (row.attempts >= this.options.maxAttempts) {
      this.log.warn({ messageId: row.id, attempts: row.attempts, reason }, 'message failed');
      const failureReason = `Delivery failed after ${row.attempts} attempts: ${reason}`.slice(
        0,
        1000,
      );
      const settled = await this.database.write(
        async (tx) => {
          const done = await settle(tx, row.id, token, {
            status: 'failed',
            updated_at: now.toISOString(),
            failure_reason: failureReason,
          });
          if (done) {
            await recordEvents(tx, row.account_id, now, [
              messageEvent(row, 'failed', now, failureReason),
            ]);
          }
          return done;
        },
        { blind: true },
      );
      return settled ? { status: 'failed' } : this.lost(row);
    }
    const availableAt = new Date(now.getTime() + retryDelayMs(this.options, row.attempts));
    this.log.info({ messageId: row.id, attempt: row.attempts, reason }, 'message delivery retry');
    const settled = await this.settle(row.id, token, {
      status: 'queued',
      updated_at: now.toISOString(),
      available_at: availableAt.toISOString(),
    });
    return settled ? { status: 'retry', availableAt, attempt: row.attempts } : this.lost(row);
  }

  /** Settles go through group commit: on SQLite a worker's messages share one transaction. */
  private settle(id: string, token: string, changes: Parameters<typeof settle>[3]) {
    return this.database.write((tx) => settle(tx, id, token, changes), { blind: true });
  }

  private lost(row: MessageRow): Outcome {
    this.log.warn({ messageId: row.id }, 'message lease expired before it was settled');
    return { status: 'lost' };
  }
}

/** `message.sent` or `message.failed`: the message as its record shows it once settled. */
function messageEvent(
  row: MessageRow,
  status: 'sent' | 'failed',
  at: Date,
  failureReason: string | null,
) {
  return {
    type: `message.${status}`,
    resource: messageResource(row.id),
    data: { ...toMessage(row), status, updatedAt: at.toISOString(), failureReason },
  } as const;
}
