import type { ApiPromise } from '../response.js';
import type { SandboxReset } from '../types.js';
import { type CreateOptions, created, type Requests } from './context.js';

export interface SandboxResource {
  /**
   * Removes the account's test data (catalogue, orders, messages, events, webhook deliveries;
   * keys and endpoints stay), with `{ seed: 'sample' }` adding a sample catalogue. A test key
   * on a development or staging instance only: production answers a `PermissionError`.
   */
  reset(
    options?: { seed?: 'sample' | undefined },
    callOptions?: CreateOptions,
  ): ApiPromise<SandboxReset>;
}

export function sandboxResource(requests: Requests): SandboxResource {
  const { api } = requests;
  return {
    reset: ({ seed } = {}, o) =>
      created(
        requests,
        (init) => api.POST('/sandbox/reset', { params: { query: seed ? { seed } : {} }, ...init }),
        o,
      ),
  };
}
