import type { Clock } from '../clock.js';
import { KeysetCursor, type Page, type PageRequest, pageSize } from '../domain/pagination.js';
import { randomBase62 } from '../domain/random.js';
import { fail, ok, type Result } from '../domain/result.js';
import type { SecretBox } from '../domain/secret-box.js';
import { type Change, change, decided, type Write } from '../store/change.js';
import type { Database, ReadDb, Tx } from '../store/database.js';
import { toIso, type WebhookEndpointRow } from '../store/tables.js';
import { type AddressPolicy, refusedUrl } from './address.js';
import { type EventType, eventRow, recordEvents, TEST_EVENT_TYPE } from './events.js';
import { insertTestEvent } from './events-repository.js';
import {
  countEndpoints,
  type DeliveryWithType,
  deleteEndpoint,
  findDelivery,
  findEndpoint,
  insertEndpoint,
  listDeliveries,
  listEndpoints,
  requeueDelivery,
  requeueSince,
  updateEndpoint,
} from './repository.js';

/** Endpoints an account may have. */
export const MAX_ENDPOINTS = 16;
/** How long the previous secret still signs after a rotation. */
export const PREVIOUS_SECRET_KEPT_MS = 24 * 60 * 60 * 1000;
/** Every event type, now and later. */
export const ALL_EVENTS = '*' as const;

export interface WebhookEndpoint {
  id: string;
  url: string;
  /** The event types sent to it, or `["*"]` for all. */
  events: Array<EventType | typeof ALL_EVENTS>;
  enabled: boolean;
  /** Why it was disabled by the service (it kept failing), or null. */
  disabledReason: string | null;
  createdAt: string;
  updatedAt: string;
}

/** An endpoint as created or rotated: with its signing secret, shown this once. */
export type WebhookEndpointWithSecret = WebhookEndpoint & { secret: string };

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export interface WebhookDelivery {
  /** The event's id: an endpoint gets each event once. */
  id: string;
  eventType: string;
  status: DeliveryStatus;
  attempts: number;
  lastStatusCode: number | null;
  /** The first 1 KB of the last answer's body, or why there was no answer. */
  lastResponse: string | null;
  lastAttemptAt: string | null;
  /** When it is tried next, while pending. */
  nextAttemptAt: string | null;
  createdAt: string;
}

/** What the webhook rules need: the store, the time, the secrets' box, where hooks may go. */
export interface WebhookRules {
  database: Database;
  clock: Clock;
  box: SecretBox;
  policy: AddressPolicy;
}

export interface NewEndpoint {
  url: string;
  events: string[];
}

export interface EndpointPatch {
  url?: string | undefined;
  events?: string[] | undefined;
  enabled?: boolean | undefined;
}

function toEndpoint(row: WebhookEndpointRow): WebhookEndpoint {
  const types = row.event_types;
  return {
    id: row.id,
    url: row.url,
    events: types.includes(ALL_EVENTS) ? [ALL_EVENTS] : (types as EventType[]),
    enabled: row.enabled,
    disabledReason: row.disabled_reason,
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}

function toDelivery(row: DeliveryWithType): WebhookDelivery {
  const status: DeliveryStatus = row.status === 'sending' ? 'pending' : row.status;
  return {
    id: row.event_id,
    eventType: row.event_type,
    status,
    attempts: row.attempts,
    lastStatusCode: row.last_status_code,
    lastResponse: row.last_response,
    lastAttemptAt: row.last_attempt_at === null ? null : toIso(row.last_attempt_at),
    nextAttemptAt: row.status === 'pending' ? toIso(row.available_at) : null,
    createdAt: toIso(row.created_at),
  };
}

/** The types, once each, or `*` alone: what the fan-out matches. */
function storedTypes(events: readonly string[]): string[] {
  if (events.includes(ALL_EVENTS)) return [ALL_EVENTS];
  return [...new Set(events)];
}

function newSecret(): string {
  return `whsec_${randomBase62(32)}`;
}

const notFound = (id: string) =>
  fail(
    'not_found',
    `No webhook endpoint ${id} in this account; list them with \`GET /v1/webhooks\`.`,
  );

async function checkUrl(
  rules: WebhookRules,
  url: string,
): Promise<Result<string, 'webhook_url_refused'>> {
  const refused = await refusedUrl(url, rules.policy);
  return refused ? fail('webhook_url_refused', `The webhook URL is refused: ${refused}.`) : ok(url);
}

/**
 * A new endpoint, as a change: the URL is checked first (scheme and every address it
 * resolves to), then the write saves it.
 */
export async function createEndpoint(
  rules: WebhookRules,
  accountId: string,
  input: NewEndpoint,
): Promise<Change<Result<WebhookEndpointWithSecret, 'webhook_url_refused' | 'too_many_webhooks'>>> {
  const url = await checkUrl(rules, input.url);
  if (!url.ok) return decided(url);
  const secret = newSecret();
  const sealed = rules.box.seal(secret);
  return change(async (tx) => {
    if ((await countEndpoints(tx, accountId)) >= MAX_ENDPOINTS) {
      return fail(
        'too_many_webhooks',
        `An account may have ${MAX_ENDPOINTS} webhook endpoints; remove one first.`,
      );
    }
    const at = rules.clock.now().toISOString();
    const row = await insertEndpoint(tx, {
      id: `we_${randomBase62(20)}`,
      account_id: accountId,
      url: url.value,
      event_types: storedTypes(input.events),
      enabled: true,
      disabled_reason: null,
      secret: sealed,
      previous_secret: null,
      previous_secret_until: null,
      failing_since: null,
      created_at: at,
      updated_at: at,
    });
    return ok({ ...toEndpoint(row), secret });
  });
}

export async function listWebhookEndpoints(
  rules: WebhookRules,
  accountId: string,
): Promise<WebhookEndpoint[]> {
  return (await listEndpoints(rules.database.reader, accountId)).map(toEndpoint);
}

export async function getEndpoint(
  rules: WebhookRules,
  accountId: string,
  id: string,
): Promise<Result<WebhookEndpoint, 'not_found'>> {
  const row = await findEndpoint(rules.database.reader, accountId, id);
  return row ? ok(toEndpoint(row)) : notFound(id);
}

/** Changes the URL (checked again), the event types, or whether it is enabled. */
export async function changeEndpoint(
  rules: WebhookRules,
  accountId: string,
  id: string,
  patch: EndpointPatch,
): Promise<Change<Result<WebhookEndpoint, 'not_found' | 'webhook_url_refused'>>> {
  if (patch.url !== undefined) {
    const url = await checkUrl(rules, patch.url);
    if (!url.ok) return decided(url);
  }
  const at = rules.clock.now().toISOString();
  return change(async (tx) => {
    const row = await updateEndpoint(tx, accountId, id, {
      ...(patch.url !== undefined && { url: patch.url }),
      ...(patch.events !== undefined && { event_types: storedTypes(patch.events) }),
      // Enabled again by its owner: its failures so far are forgiven.
      ...(patch.enabled !== undefined && {
        enabled: patch.enabled,
        disabled_reason: null,
        ...(patch.enabled && { failing_since: null }),
      }),
      updated_at: at,
    });
    return row ? ok(toEndpoint(row)) : notFound(id);
  });
}

/** Removes the endpoint and its deliveries: nothing more is sent to it. */
export function removeEndpoint(accountId: string, id: string): Change<Result<void, 'not_found'>> {
  return change(async (tx) =>
    (await deleteEndpoint(tx, accountId, id)) ? ok(undefined) : notFound(id),
  );
}

/**
 * A new signing secret, shown this once. The one it replaces still signs for 24 hours: each
 * delivery carries a signature by each, so receivers can switch over at their pace.
 */
export function rotateSecret(
  rules: WebhookRules,
  accountId: string,
  id: string,
): Write<Result<WebhookEndpointWithSecret, 'not_found'>> {
  const secret = newSecret();
  const sealed = rules.box.seal(secret);
  return change(async (tx) => {
    const current = await findEndpoint(tx, accountId, id);
    if (!current) return notFound(id);
    const now = rules.clock.now();
    const row = await updateEndpoint(tx, accountId, id, {
      secret: sealed,
      previous_secret: current.secret,
      previous_secret_until: new Date(now.getTime() + PREVIOUS_SECRET_KEPT_MS).toISOString(),
      updated_at: now.toISOString(),
    });
    return row ? ok({ ...toEndpoint(row), secret }) : notFound(id);
  });
}

/** Sends a `webhook.test` event to this endpoint alone (whatever types it wants). */
export function sendTestEvent(
  rules: WebhookRules,
  accountId: string,
  id: string,
): Write<Result<WebhookDelivery, 'not_found'>> {
  return change(async (tx) => {
    const endpoint = await findEndpoint(tx, accountId, id);
    if (!endpoint) return notFound(id);
    const event = eventRow(tx, accountId, rules.clock.now(), {
      type: TEST_EVENT_TYPE,
      resource: `webhooks/${id}`,
      data: { webhookId: id, message: 'A test event from Animal Store.' },
    });
    const row = await insertTestEvent(tx, event, id);
    return ok(toDelivery({ ...row, event_type: TEST_EVENT_TYPE }));
  });
}

/** Deliveries' cursors: the last event id of the page (newest first). */
const DELIVERY_CURSOR = new KeysetCursor('d1', 'evt_[0-9A-Za-z]{20}', 24);

/** The endpoint's deliveries, newest first, in keyset pages. */
export async function listEndpointDeliveries(
  rules: WebhookRules,
  accountId: string,
  id: string,
  query: PageRequest,
): Promise<Result<Page<WebhookDelivery>, 'not_found' | 'invalid_cursor'>> {
  const before = DELIVERY_CURSOR.decode(query.cursor);
  if (!before.ok) return before;
  const { reader } = rules.database;
  if (!(await findEndpoint(reader, accountId, id))) return notFound(id);
  const limit = pageSize(query);
  const rows = await listDeliveries(reader, accountId, id, {
    beforeEventId: before.value,
    take: limit + 1,
  });
  return ok(DELIVERY_CURSOR.page(rows, limit, (row) => row.event_id, toDelivery));
}

/** Sends a delivery again now, whatever became of it (replay from the log). */
export function retryDelivery(
  rules: WebhookRules,
  accountId: string,
  id: string,
  deliveryId: string,
): Write<Result<WebhookDelivery, 'not_found' | 'delivery_in_progress'>> {
  return change(async (tx) => {
    const at = rules.clock.now().toISOString();
    const row = await requeueDelivery(tx, accountId, id, deliveryId, at);
    const current = await findDelivery(tx, accountId, id, deliveryId);
    if (!current) {
      return fail(
        'not_found',
        `No delivery ${deliveryId} to webhook ${id}; list them with ` +
          `\`GET /v1/webhooks/${id}/deliveries\`.`,
      );
    }
    if (!row) {
      return fail(
        'delivery_in_progress',
        `Delivery ${deliveryId} is being sent right now; retry it once it has settled.`,
      );
    }
    return ok(toDelivery(current));
  });
}

/** How far back a recovery reaches: as far as events are kept. */
export const RECOVER_DAYS = 30;
/** The most deliveries one recovery queues (of each kind); a larger one is asked for again. */
export const RECOVER_LIMIT = 10_000;

export interface Recovery {
  /** Deliveries queued: sent again, or sent for the first time. */
  queued: number;
  /** True when it stopped at RECOVER_LIMIT (of either kind): ask again for the rest. */
  more: boolean;
}

/**
 * Sends again, after an outage, every delivery to the endpoint of an event since `since` that
 * failed, or with `all` every event since then of the types it wants (sent before or not). The
 * deliveries go back in line, and the dispatcher sends them under its caps (two in flight to the
 * endpoint, a quarter of the slots for the account), so a recovery delays no other account's
 * deliveries. An endpoint must be enabled: nothing is sent to a disabled one.
 */
export function recoverEndpoint(
  rules: WebhookRules,
  accountId: string,
  id: string,
  { since, all }: { since: string; all: boolean },
): Write<Result<Recovery, 'not_found' | 'validation_failed' | 'endpoint_disabled'>> {
  return change(async (tx) => {
    const now = rules.clock.now();
    const from = new Date(since);
    const earliest = new Date(now.getTime() - RECOVER_DAYS * 24 * 60 * 60 * 1000);
    if (Number.isNaN(from.getTime()) || from < earliest || from > now) {
      return fail(
        'validation_failed',
        `\`since\` must be within the last ${RECOVER_DAYS} days (events are kept that long), ` +
          `not after now: ${earliest.toISOString()} or later.`,
      );
    }
    const endpoint = await findEndpoint(tx, accountId, id);
    if (!endpoint) return notFound(id);
    if (!endpoint.enabled) {
      return fail('endpoint_disabled', `Webhook ${id} is disabled; enable it first.`);
    }
    return ok(
      await requeueSince(
        tx,
        accountId,
        id,
        from.toISOString(),
        now.toISOString(),
        all,
        RECOVER_LIMIT,
      ),
    );
  });
}

/**
 * Tells the account that the service disabled one of its endpoints: `webhook_endpoint.disabled`,
 * with the endpoint as it now is, in the transaction that disabled it; its other endpoints that
 * want it receive it (the disabled one no longer takes deliveries).
 */
export async function recordDisabled(
  tx: Tx,
  endpoint: { id: string; account_id: string },
  at: Date,
): Promise<void> {
  const row = await findEndpoint(tx, endpoint.account_id, endpoint.id);
  if (!row) return;
  await recordEvents(tx, endpoint.account_id, at, [
    {
      type: 'webhook_endpoint.disabled',
      resource: `webhooks/${endpoint.id}`,
      data: toEndpoint(row),
    },
  ]);
}

/** What the account page says of the account's endpoints: each the service disabled. */
export async function disabledNotices(
  db: ReadDb,
  accountId: string,
): Promise<Array<{ text: string; href: string }>> {
  return (await listEndpoints(db, accountId))
    .filter((row) => !row.enabled && row.disabled_reason !== null)
    .map((row) => ({
      text: `The service disabled the webhook endpoint ${row.url}: ${row.disabled_reason}`,
      href: `/portal/webhooks/${row.id}`,
    }));
}
