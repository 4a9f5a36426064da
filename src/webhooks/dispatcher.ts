import { createHmac, randomUUID } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { SecretBox } from '../domain/secret-box.js';
import type { Outages } from '../ops/outages.js';
import type { Database } from '../store/database.js';
import { toIso } from '../store/tables.js';
import {
  anyDue,
  claimDeliveries,
  endpointFailed,
  endpointSucceeded,
  type Outgoing,
  outgoing,
  settleDelivery,
} from '../store/webhooks-repository.js';
import { type AddressPolicy, guardedLookup, refusedTarget } from './address.js';

export const SIGNATURE_HEADER = 'animal-store-signature';
export const EVENT_ID_HEADER = 'animal-store-event-id';
/** Of an answer's body, what the delivery log keeps. */
const RESPONSE_KEPT_BYTES = 1024;

export type DeliveryOutcome = 'delivered' | 'retry' | 'failed' | 'lost';

/** What one attempt came to: the answer's status and first bytes, or why there was none. */
interface Attempt {
  statusCode: number | null;
  response: string;
}

/**
 * `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`, one `v1` per secret (the
 * new and, for 24 hours after a rotation, the previous): as Stripe signs.
 */
export function signature(secrets: readonly string[], timestamp: number, body: string): string {
  const signed = `${timestamp}.${body}`;
  const v1 = secrets.map(
    (secret) => `v1=${createHmac('sha256', secret).update(signed).digest('hex')}`,
  );
  return [`t=${timestamp}`, ...v1].join(',');
}

/**
 * Sends webhook deliveries, at least once, from every instance that runs the worker: claims due
 * deliveries under a lease (as the message queue claims messages), POSTs each event to its
 * endpoint, signed, and settles it under that lease: delivered on a 2xx, else tried again with
 * exponential back-off and jitter until the retry period (3 days) is over, then failed. An
 * endpoint failing for the whole period is disabled. Redirects are not followed, and every
 * connection checks the address it goes to (src/webhooks/address.ts).
 */
export class WebhookDispatcher {
  private running = false;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  /** Aborts the POSTs in flight when the dispatcher closes: their leases run out, and they
   * are sent again (by this instance once restarted, or another). */
  private readonly stopping = new AbortController();
  private readonly lookup;

  constructor(
    private readonly database: Database,
    private readonly clock: Clock,
    private readonly box: SecretBox,
    private readonly options: Config['webhooks'],
    private readonly policy: AddressPolicy,
    private readonly log: FastifyBaseLogger,
    private readonly outages: Outages,
    /** Told every attempt's outcome (the metrics). */
    private readonly observe: (outcome: DeliveryOutcome) => void = () => {},
  ) {
    this.lookup = guardedLookup(policy);
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  /** Stops claiming, and cuts the POSTs in flight short (their deliveries are tried again). */
  async close(): Promise<void> {
    this.running = false;
    this.stopping.abort();
    this.wake?.();
    await this.loop;
  }

  /** Claims and sends one round of due deliveries; how many it claimed. */
  async round(): Promise<number> {
    const now = this.clock.now();
    const lease = {
      token: randomUUID(),
      now: now.toISOString(),
      until: new Date(now.getTime() + this.options.leaseMs).toISOString(),
    };
    if (!(await anyDue(this.database.reader, lease.now))) return 0;
    const claimed = await claimDeliveries(this.database, lease, this.options.concurrency);
    if (claimed.length === 0) return 0;
    const items = await outgoing(this.database.reader, lease.token);
    await Promise.all(items.map((item) => this.deliver(item, lease.token)));
    return claimed.length;
  }

  private async run(): Promise<void> {
    while (this.running) {
      let claimed = 0;
      try {
        claimed = await this.round();
      } catch (err) {
        if (!this.outages.databaseFailed(err)) {
          this.log.error({ err }, 'webhook dispatcher: a round failed; will try again');
        }
      }
      // A full claim means more may be due at once; otherwise wait for the next poll.
      if (claimed < this.options.concurrency && this.running) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, this.options.pollMs);
          this.wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        this.wake = undefined;
      }
    }
  }

  private async deliver(item: Outgoing, token: string): Promise<void> {
    const body =
      `{"id":${JSON.stringify(item.event_id)},"type":${JSON.stringify(item.event_type)},` +
      `"createdAt":${JSON.stringify(toIso(item.event_created_at))},"data":${item.event_data}}`;
    const now = this.clock.now();
    const secrets = this.secretsOf(item, now);
    const attempt: Attempt =
      secrets.length === 0
        ? { statusCode: null, response: 'The signing secret cannot be read (server key changed).' }
        : await this.post(item, body, signature(secrets, Math.floor(now.getTime() / 1000), body));
    const ok = attempt.statusCode !== null && attempt.statusCode >= 200 && attempt.statusCode < 300;
    const at = this.clock.now();
    let outcome: DeliveryOutcome;
    try {
      outcome = await this.database.write(async (tx) => {
        const base = {
          last_status_code: attempt.statusCode,
          last_response: attempt.response,
          at: at.toISOString(),
        };
        if (ok) {
          const settled = await settleDelivery(tx, item.endpoint_id, item.event_id, token, {
            ...base,
            status: 'delivered',
          });
          if (settled) await endpointSucceeded(tx, item.endpoint_id);
          return settled ? 'delivered' : 'lost';
        }
        const age = at.getTime() - new Date(toIso(item.created_at)).getTime();
        const giveUp = age >= this.options.retryForMs;
        const settled = await settleDelivery(tx, item.endpoint_id, item.event_id, token, {
          ...base,
          status: giveUp ? 'failed' : 'pending',
          ...(!giveUp && { available_at: this.nextAttempt(item, at).toISOString() }),
        });
        if (!settled) return 'lost';
        const disabled = await endpointFailed(
          tx,
          item.endpoint_id,
          // Failing since the event it could not take: a delivery that gives up after the
          // whole period disables the endpoint unless a delivery succeeded meanwhile.
          toIso(item.created_at),
          at.toISOString(),
          new Date(at.getTime() - this.options.retryForMs).toISOString(),
          `Every delivery failed for ${Math.round(this.options.retryForMs / 3_600_000)} hours or more; ` +
            'enable it again once it answers.',
        );
        if (disabled) {
          this.log.warn({ webhookId: item.endpoint_id }, 'webhook endpoint disabled: kept failing');
        }
        return giveUp ? 'failed' : 'retry';
      });
    } catch (err) {
      // Its lease runs out and another round sends it again.
      if (!this.outages.databaseFailed(err)) {
        this.log.error({ err }, 'webhook dispatcher: settling a delivery failed');
      }
      outcome = 'lost';
    }
    this.observe(outcome);
  }

  /** Exponential back-off with ±20% jitter, capped, and never past the retry period's end. */
  private nextAttempt(item: Outgoing, at: Date): Date {
    const { retryBaseMs, retryMaxMs, retryForMs } = this.options;
    const delay = Math.min(retryMaxMs, retryBaseMs * 2 ** Math.min(item.attempts - 1, 40));
    const jittered = Math.round(delay * (0.8 + Math.random() * 0.4));
    const end = new Date(toIso(item.created_at)).getTime() + retryForMs;
    return new Date(Math.min(at.getTime() + jittered, end));
  }

  /** The current secret, and the previous one while it is still kept. */
  private secretsOf(item: Outgoing, now: Date): string[] {
    const secrets: string[] = [];
    const current = this.box.open(item.secret);
    if (current) secrets.push(current);
    if (
      item.previous_secret &&
      item.previous_secret_until &&
      new Date(toIso(item.previous_secret_until)).getTime() > now.getTime()
    ) {
      const previous = this.box.open(item.previous_secret);
      if (previous) secrets.push(previous);
    }
    return secrets;
  }

  /** One POST: its status and the first 1 KB of its body, or why there was no answer. */
  private post(item: Outgoing, body: string, signed: string): Promise<Attempt> {
    // Checked at registration, and again now (the policy may have changed since); a host's
    // addresses are checked at connection (the lookup).
    const target = refusedTarget(item.url, this.policy);
    if (target.refused !== undefined) {
      return Promise.resolve({ statusCode: null, response: `Refused: ${target.refused}.` });
    }
    const { url } = target;
    const client = url.protocol === 'https:' ? https : http;
    return new Promise<Attempt>((resolve) => {
      let settled = false;
      const done = (attempt: Attempt) => {
        if (settled) return;
        settled = true;
        resolve(attempt);
      };
      const request = client.request(
        url,
        {
          method: 'POST',
          agent: false,
          lookup: this.lookup as never,
          signal: AbortSignal.any([
            AbortSignal.timeout(this.options.timeoutMs),
            this.stopping.signal,
          ]),
          headers: {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            'user-agent': 'AnimalStore-Webhooks/1.0',
            [SIGNATURE_HEADER]: signed,
            [EVENT_ID_HEADER]: item.event_id,
          },
        },
        (response) => {
          const chunks: Buffer[] = [];
          let size = 0;
          const finish = () => {
            const text = Buffer.concat(chunks).subarray(0, RESPONSE_KEPT_BYTES).toString('utf8');
            done({ statusCode: response.statusCode ?? null, response: text });
          };
          response.on('data', (chunk: Buffer) => {
            if (size >= RESPONSE_KEPT_BYTES) return;
            chunks.push(chunk);
            size += chunk.length;
            // Enough kept: the rest is not read.
            if (size >= RESPONSE_KEPT_BYTES) {
              finish();
              response.destroy();
            }
          });
          response.on('end', finish);
          response.on('error', finish);
          response.on('close', finish);
        },
      );
      request.on('error', (error: Error) => {
        const reason = this.stopping.signal.aborted
          ? 'Cut short: the sending instance stopped.'
          : error.name === 'AbortError' || error.name === 'TimeoutError'
            ? `No answer within ${this.options.timeoutMs / 1000} s.`
            : `No answer: ${error.message}`;
        done({ statusCode: null, response: reason.slice(0, RESPONSE_KEPT_BYTES) });
      });
      request.end(body);
    });
  }
}
