import type { ColumnType, Insertable, Selectable } from 'kysely';

/** SQLite hands back timestamps as ISO text, PostgreSQL (`timestamptz`) as Date. */
type Timestamp = ColumnType<Date | string, string, string>;

export interface AccountsTable {
  id: string;
  email: string;
  password_hash: string;
  plan: string;
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
  created_at: Timestamp;
  last_used_at: Timestamp | null;
  revoked_at: Timestamp | null;
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
  status: string;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface MessagesTable {
  id: string;
  account_id: string;
  message: string;
  status: string;
  attempts: number;
  /** When the message may next be claimed (creation, or after a retry's back-off). */
  available_at: Timestamp;
  /** Set while a worker holds the message; an expired lease makes it claimable again. */
  lease_token: string | null;
  lease_until: Timestamp | null;
  failure_reason: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
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
  status: string;
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

/** Each account's last id given in each numbered table. */
export interface IdCountersTable {
  account_id: string;
  categories: number;
  pets: number;
  orders: number;
}

export interface Tables {
  id_counters: IdCountersTable;
  accounts: AccountsTable;
  api_keys: ApiKeysTable;
  categories: CategoriesTable;
  pets: PetsTable;
  messages: MessagesTable;
  deprecated_calls: DeprecatedCallsTable;
  orders: OrdersTable;
  portal_sessions: PortalSessionsTable;
}

export type AccountRow = Selectable<AccountsTable>;
export type ApiKeyRow = Selectable<ApiKeysTable>;
export type CategoryRow = Selectable<CategoriesTable>;
export type PetRow = Selectable<PetsTable>;
export type NewPetRow = Insertable<PetsTable>;
export type MessageRow = Selectable<MessagesTable>;
/** A message as inserted: every column, the empty ones as null. */
export type NewMessageRow = Required<Insertable<MessagesTable>>;
export type OrderRow = Selectable<OrdersTable>;

// What toISOString() writes, and what we store in SQLite: already canonical, nothing to do.
const CANONICAL_ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

export function toIso(value: Date | string): string {
  if (typeof value === 'string' && CANONICAL_ISO.test(value)) return value;
  return (value instanceof Date ? value : new Date(value)).toISOString();
}
