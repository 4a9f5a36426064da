import {
  type ColumnType,
  type Generated,
  type Insertable,
  type RawBuilder,
  type Selectable,
  sql,
} from 'kysely';

/** SQLite hands back timestamps as ISO text, PostgreSQL (`timestamptz`) as Date. */
type Timestamp = ColumnType<Date | string, string, string>;

// What each status column may hold. The domain re-exports these lists (its rules say how a
// row moves between them) and the HTTP schemas make their enums of them.
export const PLANS = ['free', 'pro', 'business', 'enterprise'] as const;
export type Plan = (typeof PLANS)[number];
export const PET_STATUSES = ['available', 'pending', 'sold'] as const;
export type PetStatus = (typeof PET_STATUSES)[number];
export const ORDER_STATUSES = ['placed', 'approved', 'delivered', 'cancelled'] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];
/** queued → processing → sent, or back to queued for a retry, or failed after the last try. */
export const MESSAGE_STATUSES = ['queued', 'processing', 'sent', 'failed'] as const;
export type MessageStatus = (typeof MESSAGE_STATUSES)[number];
/**
 * pending → sending (under a lease) → delivered, back to pending to retry, or failed. The API
 * shows `sending` as `pending` (src/webhooks/domain.ts).
 */
export type WebhookDeliveryStatus = 'pending' | 'sending' | 'delivered' | 'failed';

export interface AccountsTable {
  id: string;
  email: string;
  password_hash: string;
  plan: Plan;
  /** Custom limits of an enterprise account; null means the plan's numbers. */
  per_minute: number | null;
  per_day: number | null;
  created_at: Timestamp;
}

export interface ApiKeysTable {
  id: string;
  account_id: string;
  name: string | null;
  prefix: string;
  /** Hex SHA-256 of the whole key; the key itself is never stored. */
  hash: string;
  /** A restricted key's scopes, a JSON array (src/domain/scopes.ts); null: full access. */
  scopes: string | null;
  created_at: Timestamp;
  last_used_at: Timestamp | null;
  revoked_at: Timestamp | null;
}

/** The origins a publishable key may be used from (one row each). */
export interface ApiKeyOriginsTable {
  origin: string;
  key_id: string;
}

/** Ids of categories, pets and orders are numbered per account (src/store/numbered.ts). */
export interface CategoriesTable {
  id: number;
  account_id: string;
  name: string;
  created_at: Timestamp;
}

export interface PetsTable {
  id: number;
  account_id: string;
  name: string;
  category_id: number;
  status: PetStatus;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface MessagesTable {
  id: string;
  account_id: string;
  message: string;
  status: MessageStatus;
  attempts: number;
  /** When the message may next be claimed (creation, or after a retry's back-off). */
  available_at: Timestamp;
  /** Set while a worker holds the message; an expired lease makes it claimable again. */
  lease_token: string | null;
  lease_until: Timestamp | null;
  failure_reason: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  /** The W3C trace context of the request that sent it, while traces are on (migration 0018). */
  traceparent: string | null;
}

export interface DeprecatedCallsTable {
  account_id: string;
  operation_id: string;
  calls: number;
  last_called_at: Timestamp;
}

export interface OrdersTable {
  id: number;
  account_id: string;
  pet_id: number;
  status: OrderStatus;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface PortalSessionsTable {
  /** Hex SHA-256 of the cookie's token; the token itself is never stored. */
  id_hash: string;
  account_id: string;
  created_at: Timestamp;
  expires_at: Timestamp;
}

/** A POST's answer kept for its `Idempotency-Key` (src/http/idempotency.ts). */
export interface IdempotencyKeysTable {
  /** The account, or `ip:<address>` for sign-up. */
  scope: string;
  /** HMAC of the scope and key under the server's key; the key itself is never stored. */
  key_hash: string;
  /** HMAC of the request's method, path and body under the server's key. */
  fingerprint: string;
  /** The answer as JSON, or sealed (base64url) when it carries a secret (decision 0004). */
  answer: string;
  /** HMAC of the credential that sent the request (src/http/idempotency.ts), the only one
   * the answer is replayed to; null in answers kept before migration 0017. */
  credential_hash: string | null;
  created_at: Timestamp;
  expires_at: Timestamp;
}

/** Each account's last id given in each numbered table. */
export interface IdCountersTable {
  account_id: string;
  categories: number;
  pets: number;
  orders: number;
}

/** What happened to a resource of an account, written with the change (src/webhooks/events.ts). */
export interface EventsTable {
  account_id: string;
  /** `evt_…`, sorting by time. */
  id: string;
  type: string;
  /** `pets/7`, `orders/3`, `messages/msg_…`. */
  resource: string;
  /** The resource as the API shows it, as JSON text. */
  data: string;
  created_at: Timestamp;
  /** The W3C trace context of the write, while traces are on (migration 0018). */
  traceparent: string | null;
}

export interface WebhookEndpointsTable {
  id: string;
  account_id: string;
  url: string;
  /** SQLite holds 1 or 0, answered as a boolean (src/store/sqlite-statements.ts). */
  enabled: boolean;
  disabled_reason: string | null;
  /** The signing secret, encrypted under the server's key (src/domain/secret-box.ts). */
  secret: string;
  previous_secret: string | null;
  previous_secret_until: Timestamp | null;
  failing_since: Timestamp | null;
  /** Since when it has answered well (its first success, or the first after failures). */
  answered_at: Timestamp | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** The event types an endpoint wants, a row each; `*` for every type, now and later. */
export interface WebhookEndpointEventsTable {
  endpoint_id: string;
  event_type: string;
}

export interface WebhookDeliveriesTable {
  endpoint_id: string;
  event_id: string;
  account_id: string;
  resource: string;
  status: WebhookDeliveryStatus;
  attempts: number;
  available_at: Timestamp;
  lease_token: string | null;
  lease_until: Timestamp | null;
  last_status_code: number | null;
  last_response: string | null;
  last_attempt_at: Timestamp | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/**
 * An account's API requests of one batch of the request log (src/request-log/domain.ts), kept
 * 7 days: a segment of its log (migration 0015).
 */
export interface RequestLogSegmentsTable {
  /** The order the segments were written in. */
  seq: Generated<number>;
  account_id: string;
  /** How many entries it holds… */
  size: number;
  /** …and how many of them answered 4xx or 5xx. */
  errors: number;
  /** When its oldest entry's request arrived… */
  first_at: Timestamp;
  /** …and its newest's. */
  last_at: Timestamp;
  /** Its entries' request ids in sixteen parts by a hash of the id, behind a header of where
   * each part ends (`ID_BUCKETS`, src/request-log/repository.ts): what a lookup searches. */
  ids: ColumnType<string | Uint8Array, string | Uint8Array, never>;
  /**
   * Its entries, oldest first: a JSON array of positional arrays
   * (src/request-log/segments.ts), as UTF-8. SQLite stores the bytes the log encoded as
   * they are (a BLOB: no string is made of them on the way in), PostgreSQL text; segments
   * written before either may be text.
   */
  entries: ColumnType<string | Uint8Array, string | Uint8Array, never>;
  /** The bodies of its 4xx and 5xx entries, a line each (`[place, body, truncated, Error]`);
   * null without any, and in segments written before migration 0016, whose entries hold
   * their bodies. */
  bodies: ColumnType<string | Uint8Array | null, string | Uint8Array | null, never>;
}

/** An account's requests in one hour by status class, as one process counted them. */
export interface RequestLogHoursTable {
  account_id: string;
  hour: Timestamp;
  writer: string;
  s2xx: number;
  s4xx: number;
  s5xx: number;
  s429: number;
}

export interface Tables {
  request_log_segments: RequestLogSegmentsTable;
  request_log_hours: RequestLogHoursTable;
  events: EventsTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_endpoint_events: WebhookEndpointEventsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  id_counters: IdCountersTable;
  accounts: AccountsTable;
  api_keys: ApiKeysTable;
  api_key_origins: ApiKeyOriginsTable;
  categories: CategoriesTable;
  pets: PetsTable;
  messages: MessagesTable;
  deprecated_calls: DeprecatedCallsTable;
  orders: OrdersTable;
  portal_sessions: PortalSessionsTable;
  idempotency_keys: IdempotencyKeysTable;
}

export type AccountRow = Selectable<AccountsTable>;
export type ApiKeyRow = Selectable<ApiKeysTable>;
export type CategoryRow = Selectable<CategoriesTable>;
export type PetRow = Selectable<PetsTable>;
export type MessageRow = Selectable<MessagesTable>;
/** A message as inserted: every column, the empty ones as null. */
export type NewMessageRow = Required<Insertable<MessagesTable>>;
export type OrderRow = Selectable<OrdersTable>;
export type EventRow = Selectable<EventsTable>;
/** An endpoint with the event types it wants: its rows of webhook_endpoint_events, sorted. */
export type WebhookEndpointRow = Selectable<WebhookEndpointsTable> & { event_types: string[] };
export type WebhookDeliveryRow = Selectable<WebhookDeliveriesTable>;
export type IdempotencyKeyRow = Selectable<IdempotencyKeysTable>;
/** A segment of the request log as inserted: every column but its number. */
export type NewRequestLogSegment = Required<Omit<Insertable<RequestLogSegmentsTable>, 'seq'>>;

/**
 * A list of `table`'s columns for raw SQL (`insert into events (${list}) …`): named from the
 * table's interface, so a misspelt or dropped column does not compile.
 */
export function columnList<T extends keyof Tables>(
  _table: T,
  columns: ReadonlyArray<keyof Tables[T] & string>,
): RawBuilder<unknown> {
  return sql.join(columns.map((column) => sql.ref(column)));
}

// What toISOString() writes, and what we store in SQLite: already canonical, nothing to do.
const CANONICAL_ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

export function toIso(value: Date | string): string {
  if (typeof value === 'string' && CANONICAL_ISO.test(value)) return value;
  return (value instanceof Date ? value : new Date(value)).toISOString();
}
