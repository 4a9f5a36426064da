import type { Capability } from './capability.js';
import { catalogue } from './catalogue/plugin.js';
import { messages } from './messages/plugin.js';
import { orders } from './orders/plugin.js';
import { requestLog } from './request-log/plugin.js';
import { sandbox } from './sandbox/plugin.js';
import { webhooks } from './webhooks/plugin.js';

/**
 * Every capability of the service (src/capability.ts), in the order their services and routes
 * are registered. The request log is first: its capture sees every route declared after it.
 */
export const CAPABILITIES: readonly Capability[] = [
  requestLog,
  catalogue,
  orders,
  webhooks,
  messages(),
  sandbox,
];
