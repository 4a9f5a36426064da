export { DEFAULT_BASE_URL, type Endpoints, resolveBaseUrl } from './base-url.js';
export {
  type AnimalStoreClient,
  type CallOptions,
  type ClientOptions,
  type CreateOptions,
  type Credentials,
  createClient,
} from './client.js';
export { AnimalStoreConnectionError, AnimalStoreError } from './errors.js';
export { type Page, PageList } from './pagination.js';
export type { RateLimitState } from './rate-limit.js';
export type { components, operations, paths } from './schema.js';
export type { Fetch } from './transport.js';
export type * from './types.js';
export { DEFAULT_TOLERANCE_SECONDS, verifyWebhookSignature } from './webhooks.js';
