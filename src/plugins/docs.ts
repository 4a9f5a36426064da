import fp from 'fastify-plugin';
import { registerOpenApi } from '../http/openapi.js';
import type { DocumentParts } from '../http/openapi-document.js';
import type { Basics } from './basics.js';

export interface DocsOptions extends Basics {
  /** What the capabilities add to the document: their schemas, events and delivery headers. */
  parts: DocumentParts;
}

/**
 * The OpenAPI document (/v1/openapi.json) and the docs page (/docs), made from the routes
 * registered after it. Opens nothing.
 */
export const docsPlugin = fp<DocsOptions>(
  async (app, { config, parts }) => {
    await registerOpenApi(app, config, parts);
  },
  { name: 'docs' },
);
