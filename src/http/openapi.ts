import swagger from '@fastify/swagger';
import scalar from '@scalar/fastify-api-reference';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import { ERRORS } from '../errors.js';

const ERROR_TABLE = Object.entries(ERRORS)
  .map(([code, { status, description }]) => `| \`${code}\` | ${status} | ${description} |`)
  .join('\n');

const DESCRIPTION = `A pet-store API: animals, their categories, and accounts with API keys.

Every catalogue operation needs an API key: \`Authorization: Bearer <API_KEY>\`. Create an
account with \`POST /v1/accounts\`, then a key with \`POST /v1/keys\` (HTTP Basic with your
email and password).

Lists are paginated by cursor: the body is a bare JSON array and the next page, if any, is in
the \`Link: <…>; rel="next"\` header (RFC 8288).

## Errors

Every error has the body \`{code, message, status}\`, \`status\` equal to the HTTP status;
validation errors add \`details\`.

| code | status | meaning |
|---|---|---|
${ERROR_TABLE}
`;

function servers(config: Config, listening: string) {
  const list = [{ url: config.publicBaseUrl ?? `${listening}/v1`, description: 'Production' }];
  if (config.stagingBaseUrl) list.push({ url: config.stagingBaseUrl, description: 'Staging' });
  return list;
}

/** The OpenAPI 3.1 document, generated from the route schemas, and the docs page at /docs. */
export async function registerOpenApi(app: FastifyInstance, config: Config): Promise<void> {
  const local = `http://${config.host}:${config.port}`;
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Animal Store API',
        version: '1.0.0',
        description: DESCRIPTION,
        license: { name: 'MIT', identifier: 'MIT' },
        contact: { name: 'Animal Store API team', url: `${config.publicBaseUrl ?? local}/docs` },
      },
      servers: servers(config, local),
      tags: [
        { name: 'Pets', description: 'The animals offered in the store.' },
        { name: 'Categories', description: 'Groups that every animal belongs to.' },
        { name: 'Accounts', description: 'Sign-up and your account.' },
        { name: 'API keys', description: 'Create, list and revoke keys (HTTP Basic).' },
      ],
      components: {
        securitySchemes: {
          bearerAuth: {
            type: 'http',
            scheme: 'bearer',
            description: 'An API key: `Authorization: Bearer as_test_…`.',
          },
          basicAuth: {
            type: 'http',
            scheme: 'basic',
            description: 'Your account email and password.',
          },
        },
      },
    },
    // Operations live under /v1 and the servers carry the prefix, so paths are written without it.
    transform: ({ schema, url, route }) => ({
      schema,
      url: url.startsWith('/v1/') ? url.slice(3) : url,
      route,
    }),
  });

  app.get('/v1/openapi.json', { schema: { hide: true } }, () => app.swagger());

  await app.register(scalar, {
    routePrefix: '/docs',
    configuration: { withDefaultFonts: false, pageTitle: 'Animal Store API' },
  });
}
