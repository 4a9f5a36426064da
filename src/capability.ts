import type { FastifyPluginAsync, FastifyPluginCallback } from 'fastify';
import type { TSchema } from 'typebox';
import type { Chore } from './ops/housekeeping.js';
import type { Basics } from './plugins/basics.js';
import type { ReadDb } from './store/database.js';

/**
 * A capability of the service (the request log, webhooks, messages…): one folder holding its
 * routes, schemas, rules, queries, workers and chores, put into the app by this one declaration.
 * The core (the request path, the store, ops) knows none of them: src/capabilities.ts lists them,
 * and buildApp (src/app.ts) registers each part where the request path needs it.
 */
export interface Capability {
  readonly name: string;
  /**
   * What it provides and runs (decorations, hooks, workers started with the worker), registered
   * after the core's services and before the request path: a hook it adds sees every route.
   * A plugin that decorates the app (fastify-plugin), closing what it opens in its onClose.
   */
  readonly services?: FastifyPluginAsync<Basics> | FastifyPluginCallback<Basics>;
  /** Its operations, registered once the request path (its hooks, errors, validation) is set. */
  readonly routes?: FastifyPluginAsync;
  /** Its portal pages, inside the portal's scope (/portal: cookies, CSRF, its error pages). */
  readonly portal?: FastifyPluginAsync;
  /** The titled schemas its operations use: the OpenAPI document names each as a component. */
  readonly components?: readonly TSchema[];
  /** The events it writes, by type, each with the schema of its `data`: the document's `Event`
   * is one of them by `type`, and its `webhooks` section lists each (src/http/openapi-document.ts). */
  readonly events?: Readonly<Record<string, TSchema>>;
  /** The headers each webhook delivery carries, by name, with what each holds: the document's
   * `webhooks` section names them. */
  readonly deliveryHeaders?: Readonly<Record<string, string>>;
  /** What the portal's account page tells the account, read when it is shown: each a sentence
   * and the page to act on it (an endpoint the service disabled…). A bounded read. */
  readonly notices?: (
    db: ReadDb,
    accountId: string,
  ) => Promise<ReadonlyArray<{ text: string; href: string }>>;
  /** What housekeeping deletes for it, by name (src/ops/housekeeping.ts). */
  readonly chores?: Readonly<Record<string, Chore>>;
}
