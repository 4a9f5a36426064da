import { createHmac } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { type Span, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import type { FastifyBaseLogger } from 'fastify';
import { type Clock, jittered, Wakeable, waitText } from '../clock.js';
import type { Config } from '../config.js';
import type { SecretBox } from '../domain/secret-box.js';
import type { Outages } from '../ops/outages.js';
import { NO_TRACING, type Tracing, traceHeaders } from '../ops/tracing.js';
import type { Database } from '../store/database.js';
import { newLease } from '../store/lease.js';
import { toIso } from '../store/tables.js';
import { type AddressPolicy, guardedLookup, refusedTarget } from './address.js';
import { recordDisabled } from './domain.js';
import {
  anyDue,
  type ClaimCaps,
  type ClaimChoice,
  claimable,
  claimDeliveries,
  endpointFailed,
  endpointSucceeded,
  type Outgoing,
  outgoing,
  settleDelivery,
} from './repository.js';

export const SIGNATURE_HEADER = 'animal-store-signature';
export const EVENT_ID_HEADER = 'animal-store-event-id';

/** The headers every delivery carries, with what each holds: Standard Webhooks' three, and the
 * service's own signature and event id. `signedHeaders` writes exactly these. */
export const DELIVERY_HEADERS = {
  'webhook-id': 'The event id (`evt_…`): the same on every attempt, to drop duplicates by.',
  'webhook-timestamp': 'When this attempt was signed, in seconds since the epoch.',
  'webhook-signature':
    'Standard Webhooks: `v1,<base64 HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{body}">` ' +
    'under the endpoint secret (after `whsec_`, base64-decoded); during a rotation, one per ' +
    'secret, space-separated. Verify the raw body as received.',
  [SIGNATURE_HEADER]: '`t=<timestamp>,v1=<hex HMAC-SHA256 of "{t}.{body}">`, one `v1` per secret.',
  [EVENT_ID_HEADER]: 'The event id, as `webhook-id`.',
} as const;
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
 * Every signature header of a delivery: ours (`signature`, Stripe's scheme) and the Standard
 * Webhooks headers (https://www.standardwebhooks.com, as Svix signs): `webhook-id`,
 * `webhook-timestamp`, and `webhook-signature: v1,<base64 HMAC-SHA256>` over
 * `<id>.<timestamp>.<body>`, one per secret, space-separated. The key is the secret's part
 * after `whsec_`, base64-decoded, as the spec's libraries read a `whsec_` secret (ours are
 * base62, a subset of base64's alphabet, 32 characters: 24 bytes). So a receiver can verify
 * with the `standardwebhooks` package or Svix's libraries, in any language.
 */
function signedHeaders(
  secrets: readonly string[],
  eventId: string,
  now: Date,
  body: string,
): Record<keyof typeof DELIVERY_HEADERS, string> {
  const timestamp = Math.floor(now.getTime() / 1000);
  const signed = `${eventId}.${timestamp}.${body}`;
  const v1 = secrets.map((secret) => {
    const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
    return `v1,${createHmac('sha256', key).update(signed).digest('base64')}`;
  });
  return {
    [SIGNATURE_HEADER]: signature(secrets, timestamp, body),
    [EVENT_ID_HEADER]: eventId,
    'webhook-id': eventId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': v1.join(' '),
  };
}

/**
 * How many deliveries may be in flight, counted over every instance, for a dispatcher of
 * `concurrency` slots: 2 to an endpoint (its backlog waits on itself), a quarter of the slots
 * for an account, and half for the endpoints slow to answer, together: failing, never answered
 * yet, or with a delivery unanswered for `slowAfterMs` (1 s, why: docs/decisions/0067). The
 * other half stays for endpoints that answer, however many never do.
 */
export function slotCaps(concurrency: number): Omit<ClaimCaps, 'take'> {
  return {
    perEndpoint: 2,
    perAccount: Math.max(1, Math.floor(concurrency / 4)),
    slow: Math.max(1, Math.floor(concurrency / 2)),
    slowAfterMs: 1_000,
  };
}

/** A delivery in a slot: whether it holds a slot of the slow half. */
interface Slot {
  slow: boolean;
}

const keyOf = (delivery: { endpoint_id: string; event_id: string }) =>
  `${delivery.endpoint_id} ${delivery.event_id}`;

/**
 * Sends webhook deliveries, at least once, from every instance that runs the worker: claims due
 * deliveries under a lease, POSTs each event to its endpoint, signed, and settles it under that
 * lease: delivered on a 2xx, else retried with back-off until the retry period is over, then
 * failed (docs/decisions/0043-webhook-deliveries.md). Redirects are not followed, and every
 * connection checks the address it goes to (src/webhooks/address.ts).
 *
 * No account can stop or starve the others: a fixed number of slots (WEBHOOK_CONCURRENCY), each
 * freed as soon as its delivery is settled, when the loop claims again at once; claims that take
 * the accounts in turn (slotCaps); a timer that ends every POST (docs/decisions/0001); and at
 * most half of the slots for slow deliveries, a delivery unanswered after `slowAfterMs` moving
 * into that half or cut short (a failed attempt) if it is full (docs/decisions/0067).
 */
export class WebhookDispatcher {
  private running = false;
  private loop: Promise<void> | undefined;
  /** The loop's wait, ended when a slot frees or the dispatcher closes. */
  private readonly idleWait = new Wakeable();
  /** A slot freed since the last claim began: the loop claims again before it waits. */
  private nudged = false;
  /** The deliveries being sent and settled, one a slot. */
  private readonly inFlight = new Set<Promise<void>>();
  /** Slots of the slow half held or reserved (at most `caps.slow`). */
  private slowHeld = 0;
  /** Cuts each POST in flight short: close() calls them all. */
  private readonly cuts = new Set<() => void>();
  private closing = false;
  private readonly caps;
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
    private readonly tracing: Tracing = NO_TRACING,
  ) {
    this.caps = slotCaps(options.concurrency);
    this.lookup = guardedLookup(policy);
  }

  start(): void {
    if (this.running || this.closing) return;
    this.running = true;
    this.loop = this.run();
  }

  /**
   * Stops claiming, cuts the POSTs in flight short, and waits for their deliveries to be settled
   * (to be tried again, the attempt counted).
   */
  async close(): Promise<void> {
    this.running = false;
    this.closing = true;
    for (const cut of this.cuts) cut();
    this.idleWait.wake();
    await this.loop;
    while (this.inFlight.size > 0) await Promise.all(this.inFlight);
  }

  private async run(): Promise<void> {
    while (this.running) {
      const free = this.options.concurrency - this.inFlight.size;
      let full = false;
      if (free > 0) {
        this.nudged = false;
        try {
          full = (await this.claim(free)) === free;
        } catch (err) {
          this.outages.logUnlessAway(err, 'webhook dispatcher: a claim failed; will try again');
        }
      }
      // Every slot filled: more may be due at once. Else wait for a slot to free (a delivery held
      // back by a cap may go then) or for the next poll.
      if (!full && this.running) await this.idle();
    }
  }

  /** Waits for the next poll, a freed slot or close(); not at all if a slot freed meanwhile. */
  private async idle(): Promise<void> {
    if (!this.nudged) await this.idleWait.sleep(this.options.pollMs);
  }

  /** Claims up to `free` due deliveries, fairly, and starts sending them; how many. */
  private async claim(free: number): Promise<number> {
    const lease = newLease(this.clock, this.options.leaseMs);
    // An idle poll reads one index entry, and writes nothing.
    if (!(await anyDue(this.database.reader, lease.now))) return 0;
    const chosen = await claimable(this.database.reader, lease.now, {
      take: free,
      ...this.caps,
    });
    // The query counts every instance's deliveries; this instance's slow half must also have a
    // slot free for each slow one, reserved now (deliveries may move into it meanwhile).
    const slow = new Set<string>();
    const taken = chosen.filter((choice: ClaimChoice) => {
      if (choice.level === 0) return true;
      if (this.slowHeld + slow.size >= this.caps.slow) return false;
      slow.add(keyOf(choice));
      return true;
    });
    this.slowHeld += slow.size;
    let reserved = slow.size;
    try {
      const claimed = await this.database.write((tx) => claimDeliveries(tx, lease, taken));
      if (claimed.length === 0) return 0;
      for (const item of await outgoing(this.database.reader, lease.token)) {
        const slot = { slow: slow.has(keyOf(item)) };
        if (slot.slow) reserved--; // the slot's now
        this.send(item, lease.token, slot);
      }
      return claimed.length;
    } finally {
      this.slowHeld -= reserved;
    }
  }

  /** Sends and settles one delivery in a slot of its own, freed (and the loop woken) after. */
  private send(item: Outgoing, token: string, slot: Slot): void {
    const delivery = this.deliver(item, token, slot)
      .catch((err: unknown) => {
        this.log.error({ err }, 'webhook dispatcher: a delivery failed');
      })
      .finally(() => {
        if (slot.slow) this.slowHeld--;
        this.inFlight.delete(delivery);
        this.nudged = true;
        this.idleWait.wake();
      });
    this.inFlight.add(delivery);
  }

  /**
   * With traces on, an attempt is a span of the trace that wrote its event (its store write's
   * child), carried to the receiver in `traceparent`; its settle's write is a span under it.
   */
  private deliver(item: Outgoing, token: string, slot: Slot): Promise<void> {
    return this.tracing.inSpan(
      'webhook delivery',
      {
        kind: SpanKind.CLIENT,
        attributes: {
          'animal_store.account_id': item.account_id,
          'animal_store.webhook_id': item.endpoint_id,
          'animal_store.event_id': item.event_id,
          'animal_store.event_type': item.event_type,
          'animal_store.attempt': item.attempts,
        },
      },
      (span) => this.attempt(item, token, slot, span),
      item.event_traceparent,
    );
  }

  private async attempt(item: Outgoing, token: string, slot: Slot, span: Span): Promise<void> {
    const body =
      `{"id":${JSON.stringify(item.event_id)},"type":${JSON.stringify(item.event_type)},` +
      `"createdAt":${JSON.stringify(toIso(item.event_created_at))},"data":${item.event_data}}`;
    const now = this.clock.now();
    const secrets = this.secretsOf(item, now);
    const attempt: Attempt =
      secrets.length === 0
        ? { statusCode: null, response: 'The signing secret cannot be read (server key changed).' }
        : await this.post(
            item,
            body,
            { ...signedHeaders(secrets, item.event_id, now, body), ...traceHeaders(span) },
            slot,
          );
    if (attempt.statusCode !== null) {
      span.setAttribute('http.response.status_code', attempt.statusCode);
    }
    const at = this.clock.now();
    const outcome = await this.settle(item, token, attempt, at).catch((err: unknown) => {
      // Its lease runs out, and it is sent again once the store is back.
      if (this.outages.databaseFailed(err)) return 'lost';
      // The store refused what was to be stored (the answer, most likely): settled again with a
      // note instead, so the delivery does not go out again for its lease to run out each time.
      this.log.error(
        { err, webhookId: item.endpoint_id, eventId: item.event_id },
        'webhook dispatcher: settling a delivery failed; settling it without the answer',
      );
      return this.settle(item, token, { ...attempt, response: UNSTORABLE }, at).catch(
        (again: unknown) => {
          this.outages.logUnlessAway(again, 'webhook dispatcher: settling a delivery failed');
          return 'lost' as const;
        },
      );
    });
    this.observe(outcome);
    span.setAttribute('animal_store.outcome', outcome);
    if (outcome !== 'delivered') span.setStatus({ code: SpanStatusCode.ERROR });
  }

  /**
   * Ends the attempt under its lease (the attempt was counted by the claim): delivered on a
   * 2xx; else pending until its next attempt, or failed once the retry period is over.
   */
  private settle(
    item: Outgoing,
    token: string,
    attempt: Attempt,
    at: Date,
  ): Promise<DeliveryOutcome> {
    const ok = attempt.statusCode !== null && attempt.statusCode >= 200 && attempt.statusCode < 300;
    const age = at.getTime() - new Date(toIso(item.created_at)).getTime();
    const giveUp = !ok && age >= this.options.retryForMs;
    return this.database.write(async (tx) => {
      const settled = await settleDelivery(tx, item.endpoint_id, item.event_id, token, {
        status: ok ? 'delivered' : giveUp ? 'failed' : 'pending',
        ...(!ok && !giveUp && { available_at: this.nextAttempt(item, at).toISOString() }),
        last_status_code: attempt.statusCode,
        last_response: attempt.response,
        at: at.toISOString(),
      });
      if (!settled) return 'lost';
      if (ok) {
        await endpointSucceeded(tx, item.endpoint_id, at.toISOString());
        return 'delivered';
      }
      const disabled = await endpointFailed(
        tx,
        item.endpoint_id,
        // Failing since the event it could not take: a delivery that gives up after the
        // whole period disables the endpoint unless a delivery succeeded meanwhile.
        toIso(item.created_at),
        at.toISOString(),
        new Date(at.getTime() - this.options.retryForMs).toISOString(),
        `Every delivery failed for ${waitText(Math.round(this.options.retryForMs / 1000))} or more; ` +
          'enable it again once it answers.',
      );
      if (disabled) {
        await recordDisabled(tx, disabled, at);
        this.log.warn({ webhookId: item.endpoint_id }, 'webhook endpoint disabled: kept failing');
      }
      return giveUp ? 'failed' : 'retry';
    });
  }

  /** Exponential back-off with ±20% jitter, capped, and never past the retry period's end. */
  private nextAttempt(item: Outgoing, at: Date): Date {
    const { retryBaseMs, retryMaxMs, retryForMs } = this.options;
    const delay = Math.min(retryMaxMs, retryBaseMs * 2 ** Math.min(item.attempts - 1, 40));
    const end = new Date(toIso(item.created_at)).getTime() + retryForMs;
    return new Date(Math.min(at.getTime() + jittered(delay), end));
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

  /**
   * One POST: its status and the first 1 KB of its body, or why there was none. Ended by a
   * timer after WEBHOOK_TIMEOUT_SECONDS, whatever the receiver does: the event loop holds the
   * timer, and the timer the request (not an AbortSignal: docs/decisions/0001). Unanswered
   * after `slowAfterMs` and not yet slow, it takes a slot of the slow half, or is ended if
   * that half is full.
   */
  private post(
    item: Outgoing,
    body: string,
    signed: Record<string, string>,
    slot: Slot,
  ): Promise<Attempt> {
    // Checked at registration, and again now (the policy may have changed since); a host's
    // addresses are checked at connection (the lookup).
    const target = refusedTarget(item.url, this.policy);
    if (target.refused !== undefined) {
      return Promise.resolve({ statusCode: null, response: `Refused: ${target.refused}.` });
    }
    if (this.closing) return Promise.resolve({ statusCode: null, response: CUT_SHORT });
    const { url } = target;
    const client = url.protocol === 'https:' ? https : http;
    return new Promise<Attempt>((resolve) => {
      let settled = false;
      const done = (attempt: Attempt) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        clearTimeout(slowTimer);
        this.cuts.delete(cut);
        resolve({ statusCode: attempt.statusCode, response: storable(attempt.response) });
      };
      const end = (response: string) => {
        done({ statusCode: null, response });
        request.destroy();
      };
      const timer = setTimeout(
        () => end(`No answer within ${this.options.timeoutMs / 1000} s.`),
        this.options.timeoutMs,
      );
      const slowTimer = slot.slow
        ? undefined
        : setTimeout(() => {
            if (this.slowHeld < this.caps.slow) {
              slot.slow = true;
              this.slowHeld++;
            } else {
              end(
                `No answer within ${this.caps.slowAfterMs / 1000} s, ` +
                  'while the slots for slow endpoints were all taken.',
              );
            }
          }, this.caps.slowAfterMs);
      const cut = () => end(CUT_SHORT);
      const request = client.request(
        url,
        {
          method: 'POST',
          agent: false,
          lookup: this.lookup as never,
          headers: {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            'user-agent': 'AnimalStore-Webhooks/1.0',
            ...signed,
          },
        },
        (response) => {
          const chunks: Buffer[] = [];
          let size = 0;
          const finish = () => {
            done({
              statusCode: response.statusCode ?? null,
              response: decodeKept(Buffer.concat(chunks)),
            });
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
      request.on('error', (error: Error) =>
        done({ statusCode: null, response: `No answer: ${error.message}` }),
      );
      this.cuts.add(cut);
      request.end(body);
    });
  }
}

const CUT_SHORT = 'Cut short: the sending instance stopped.';
/** What a delivery keeps of an answer the store refused. */
export const UNSTORABLE = 'The answer could not be stored.';

/**
 * The first RESPONSE_KEPT_BYTES of an answer's body as text: invalid UTF-8 replaced (U+FFFD),
 * and a character cut at the end left out.
 */
function decodeKept(bytes: Buffer): string {
  return new TextDecoder('utf-8').decode(bytes.subarray(0, RESPONSE_KEPT_BYTES), { stream: true });
}

/**
 * Text every store takes, in at most RESPONSE_KEPT_BYTES of UTF-8: NUL, which PostgreSQL's text
 * refuses, replaced (U+FFFD), as are lone surrogates (by the encoding); cut at a character.
 */
export function storable(text: string): string {
  const encoded = Buffer.from(text.replaceAll('\0', '\uFFFD'), 'utf8');
  return encoded.length <= RESPONSE_KEPT_BYTES ? encoded.toString('utf8') : decodeKept(encoded);
}
