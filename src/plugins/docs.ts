import fp from 'fastify-plugin';
import type { TSchema } from 'typebox';
import { registerOpenApi } from '../http/openapi.js';
import type { Basics } from './basics.js';

export interface DocsOptions extends Basics {
  /** The capabilities' titled schemas, named as components beside the core's. */
  components: readonly TSchema[];
  /** The capabilities' events, by type, with the schema of their `data`. */
  events: Readonly<Record<string, TSchema>>;
}

/**
 * The OpenAPI document (/v1/openapi.json) and the docs page (/docs), made from the routes
 * registered after it. Opens nothing.
 */
export const docsPlugin = fp<DocsOptions>(
  async (app, { config, components, events }) => {
    await registerOpenApi(app, config, components, events);
  },
  { name: 'docs' },
);
