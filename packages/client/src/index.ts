export { DEFAULT_BASE_URL, type Endpoints, resolveBaseUrl } from './base-url.js';
export {
  type AnimalStoreClient,
  type AppInfo,
  type CallOptions,
  type ClientOptions,
  type CreateOptions,
  type Credentials,
  createClient,
  type HeaderFields,
} from './client.js';
export { ERROR_STATUS, type ErrorCode } from './error-codes.js';
export {
  AnimalStoreConnectionError,
  AnimalStoreError,
  type AnimalStoreErrorCode,
  AuthenticationError,
  type ClientErrorCode,
  ConflictError,
  ConnectionError,
  IdempotencyError,
  NotFoundError,
  PermissionError,
  RateLimitError,
  ServerError,
  ValidationError,
} from './errors.js';
export { type Page, PageList } from './pagination.js';
export type { RateLimitState } from './rate-limit.js';
export type { AccountsResource, KeysResource } from './resources/accounts.js';
export type { CategoriesResource } from './resources/categories.js';
export type { EventsResource } from './resources/events.js';
export type { MessagesResource } from './resources/messages.js';
export type { PetsResource } from './resources/pets.js';
export type { RequestsResource } from './resources/requests.js';
export type { SandboxResource } from './resources/sandbox.js';
export type { StoreResource } from './resources/store.js';
export type { WebhooksResource } from './resources/webhooks.js';
export { type Answered, ApiPromise, type LastResponse, type WithResponse } from './response.js';
export type { components, operations, paths } from './schema.js';
export { OPERATION_SCOPES, SCOPES, type Scope } from './scopes.js';
export type { Fetch } from './transport.js';
export type * from './types.js';
export { VERSION } from './version.js';
export {
  type ConstructEventOptions,
  constructWebhookEvent,
  DEFAULT_TOLERANCE_SECONDS,
  generateWebhookTestHeaders,
  type SignatureHeader,
  verifyWebhookSignature,
  type WebhookHeaders,
  WebhookSignatureError,
  type WebhookSignatureFailure,
  type WebhookTestHeaderOptions,
} from './webhooks.js';
