import fp from 'fastify-plugin';
import { registerOpenApi } from '../http/openapi.js';
import type { Basics } from './basics.js';

/**
 * The OpenAPI document (/v1/openapi.json) and the docs page (/docs), made from the routes
 * registered after it. Opens nothing.
 */
export const docsPlugin = fp<Basics>(
  async (app, { config }) => {
    await registerOpenApi(app, config);
  },
  { name: 'docs' },
);
