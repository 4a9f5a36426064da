import type { Capability } from '../capability.js';
import { keyedRoutes } from '../http/auth.js';
import { sandboxPages } from './portal.js';
import { sandboxRoutes } from './routes.js';
import { SandboxReset } from './schemas.js';

/**
 * The sandbox (`POST /v1/sandbox/reset`, `/portal/sandbox`): an account's test data removed in
 * one transaction, and a sample catalogue added on request, outside production only
 * (docs/decisions/0084-sandbox-reset.md).
 */
export const sandbox: Capability = {
  name: 'sandbox',
  routes: keyedRoutes('/v1', sandboxRoutes),
  portal: sandboxPages,
  components: [SandboxReset],
  events: { 'sandbox.reset': SandboxReset },
};
