import { KeysetCursor, type Page, type PageRequest, pageSize } from '../domain/pagination.js';
import { base62Digits, randomBase62 } from '../domain/random.js';
import { ok, type Result } from '../domain/result.js';
import { traceparentOf } from '../ops/tracing.js';
import { idClockOf, type ReadDb, type Tx } from '../store/handles.js';
import { type EventRow, toIso } from '../store/tables.js';
import { insertEvent, listEvents, type NewEventRow } from './events-repository.js';

/**
 * Events: what happened to an account's resources. Each is written in the transaction of the
 * change it reports (the transactional outbox: no event without its change, no change without
 * its event), together with a delivery for each of the account's webhook endpoints that wants
 * it (src/webhooks/events-repository.ts).
 */
export const EVENT_TYPES = [
  'pet.created',
  'pet.updated',
  'pet.deleted',
  'order.placed',
  'order.approved',
  'order.delivered',
  'order.cancelled',
  'order.deleted',
  'message.sent',
  'message.failed',
  'message.deleted',
  'sandbox.reset',
  'webhook_endpoint.disabled',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];
/** Sent by `POST /v1/webhooks/{id}/test`, to that endpoint alone. */
export const TEST_EVENT_TYPE = 'webhook.test';

/** How far back `GET /v1/events` lists, and how long events are kept. */
export const EVENTS_KEPT_MS = 30 * 24 * 60 * 60 * 1000;

/** The oldest instant whose events are still kept at `now`. */
export function eventsKeptSince(now: Date): string {
  return new Date(now.getTime() - EVENTS_KEPT_MS).toISOString();
}

export interface Event {
  id: string;
  type: string;
  createdAt: string;
  data: unknown;
}

export interface NewEvent {
  type: EventType;
  /** `pets/7`, `orders/3`, `messages/msg_…`: deliveries of one resource keep their order. */
  resource: string;
  data: unknown;
}

/**
 * `evt_` then 7 base62 digits of the millisecond, 3 of a sequence within it, 10 random: the
 * ids a database's writes make sort in the order they were made, even within one millisecond
 * (its id clock, lent with the write's `Tx`: src/store/id-clock.ts), so the events of one
 * resource sort in the order of its changes.
 */
export function newEventId(tx: Tx, ms: number): string {
  const made = idClockOf(tx).next(ms);
  return `evt_${base62Digits(made.ms, 7)}${base62Digits(made.sequence, 3)}${randomBase62(10)}`;
}

/** The row of an event (a test event too) of `accountId` at `at` in the write `tx`. */
export function eventRow(
  tx: Tx,
  accountId: string,
  at: Date,
  event: Omit<NewEvent, 'type'> & { type: EventType | typeof TEST_EVENT_TYPE },
): NewEventRow {
  return {
    account_id: accountId,
    id: newEventId(tx, at.getTime()),
    type: event.type,
    resource: event.resource,
    data: JSON.stringify(event.data),
    created_at: at.toISOString(),
    traceparent: traceparentOf(),
  };
}

/** Writes events in the write's transaction, side by side (pipelined on PostgreSQL). */
export async function recordEvents(
  tx: Tx,
  accountId: string,
  at: Date,
  events: readonly NewEvent[],
): Promise<void> {
  await Promise.all(events.map((event) => insertEvent(tx, eventRow(tx, accountId, at, event))));
}

export function toEvent(row: EventRow): Event {
  return {
    id: row.id,
    type: row.type,
    createdAt: toIso(row.created_at),
    data: JSON.parse(row.data) as unknown,
  };
}

/** Events' cursors: the last event id of the page. */
const EVENT_CURSOR = new KeysetCursor('e1', 'evt_[0-9A-Za-z]{20}', 24);

/** The account's events of the last 30 days, oldest first, in keyset pages. */
export async function listEventPage(
  db: ReadDb,
  accountId: string,
  now: Date,
  query: PageRequest & { type?: string | undefined },
): Promise<Result<Page<Event>, 'invalid_cursor'>> {
  const after = EVENT_CURSOR.decode(query.cursor);
  if (!after.ok) return after;
  const limit = pageSize(query);
  const rows = await listEvents(db, accountId, {
    type: query.type,
    since: eventsKeptSince(now),
    afterId: after.value,
    take: limit + 1,
  });
  return ok(EVENT_CURSOR.page(rows, limit, (row) => row.id, toEvent));
}
