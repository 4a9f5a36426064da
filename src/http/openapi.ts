import swagger from '@fastify/swagger';
import scalar from '@scalar/fastify-api-reference';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import { ERRORS } from '../errors.js';

const ERROR_TABLE = Object.entries(ERRORS)
  .map(([code, { status, description }]) => `| \`${code}\` | ${status} | ${description} |`)
  .join('\n');

const DESCRIPTION = `A pet-store API: animals, their categories, and accounts with API keys.

Every catalogue operation needs an API key: \`Authorization: Bearer <API_KEY>\`. Get one in
the developer portal at \`/portal\`, or create an account with \`POST /v1/accounts\`, then a
key with \`POST /v1/keys\` (HTTP Basic with your email and password).

Lists are paginated by cursor: the body is a bare JSON array and the next page, if any, is in
the \`Link: <…>; rel="next"\` header (RFC 8288).

## Deprecations

\`GET /v1/pets/{petId}\` is deprecated and is removed on 5 December 2030: use \`GET /v1/pets\`
with the \`status\` filter. Until then its answers carry \`Deprecation\` (RFC 9745), \`Sunset\`
(RFC 8594) and \`Link\` headers; from then on it answers \`410 endpoint_removed\`. Breaking
changes only ever come in a new version prefix, announced at least 12 months ahead this way.

## Errors

Every error has the body \`{code, message, status}\`, \`status\` equal to the HTTP status;
validation errors add \`details\`.

## Rate limits

Requests are counted per account (all its keys together) in two fixed windows at once, the
current UTC minute and the current UTC day: Free 60/1,000, Pro 300/10,000, Business
1,000/100,000, Enterprise custom. A request is accepted only when both windows have room; a
refused one counts in neither. Every response carries \`X-RateLimit-Limit\`,
\`X-RateLimit-Remaining\` and \`X-RateLimit-Reset\` for the window with the fewest requests
left, plus the IETF \`RateLimit-Policy\` and \`RateLimit\` fields. Over the limit the answer is
\`429 rate_limited\` with \`Retry-After\` in seconds. Back off exponentially: a key that sends
more than 20 requests while limited in one window is banned for 15 minutes
(\`429 key_banned\`). Requests without valid credentials are limited per client IP with the
Free numbers.

| code | status | meaning |
|---|---|---|
${ERROR_TABLE}
`;

const RATE_LIMIT_HEADERS = {
  'X-RateLimit-Limit': 'Requests allowed in the window with the fewest requests left.',
  'X-RateLimit-Remaining': 'Requests left in that window.',
  'X-RateLimit-Reset': 'Unix time (seconds) at which that window refills.',
  'RateLimit-Policy': 'Both windows, as `"minute";q=60;w=60, "day";q=1000;w=86400` (IETF draft).',
  RateLimit: 'That window now, as `"minute";r=59;t=37` (IETF draft).',
};

type Document = Record<string, unknown> & {
  paths?: Record<string, Record<string, { responses?: Record<string, { headers?: object }> }>>;
  components?: Record<string, unknown>;
};

/** Every response of every operation carries the rate-limit headers: say so once, reference it. */
function withRateLimitHeaders<T>(document: T): T {
  const doc = document as Document;
  doc.components = {
    ...doc.components,
    headers: Object.fromEntries(
      Object.entries(RATE_LIMIT_HEADERS).map(([name, description]) => [
        name,
        { description, schema: { type: name.startsWith('X-') ? 'integer' : 'string' } },
      ]),
    ),
  };
  for (const operations of Object.values(doc.paths ?? {})) {
    for (const operation of Object.values(operations)) {
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        const refs = Object.fromEntries(
          Object.keys(RATE_LIMIT_HEADERS).map((n) => [n, { $ref: `#/components/headers/${n}` }]),
        );
        const retry =
          status === '429' || status === '503'
            ? {
                'Retry-After': {
                  description: 'Seconds to wait before retrying.',
                  schema: { type: 'integer' },
                },
              }
            : {};
        response.headers = { ...response.headers, ...refs, ...retry };
      }
    }
  }
  return document;
}

/** The quickstart endpoint has its own base address, without the /v1 prefix (seed). */
function withMessagesServer<T>(document: T, url: string): T {
  const paths = (document as Document).paths ?? {};
  for (const [path, item] of Object.entries(paths)) {
    if (path.startsWith('/messages')) {
      (item as Record<string, unknown>).servers = [{ url, description: 'Quickstart messages' }];
    }
  }
  return document;
}

/** The seed's two environments, and in development the local listener. */
function servers(config: Config, listening: string) {
  const list: Array<{ url: string; description: string }> = [];
  if (config.publicBaseUrl) list.push({ url: config.publicBaseUrl, description: 'Production' });
  if (config.stagingBaseUrl) list.push({ url: config.stagingBaseUrl, description: 'Staging' });
  if (config.env === 'development') {
    list.push({ url: `${listening}/v1`, description: 'This server (development)' });
  }
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
        contact: {
          name: 'Animal Store API team',
          url: `${config.ownBaseUrl ? new URL(config.ownBaseUrl).origin : local}/docs`,
        },
      },
      servers: servers(config, local),
      tags: [
        { name: 'Pets', description: 'The animals offered in the store.' },
        {
          name: 'Store',
          description: 'Orders and inventory: an order moves a pet to pending, then sold.',
        },
        { name: 'Categories', description: 'Groups that every animal belongs to.' },
        { name: 'Accounts', description: 'Sign-up and your account.' },
        { name: 'API keys', description: 'Create, list and revoke keys (HTTP Basic).' },
        {
          name: 'Messages',
          description: 'The quickstart example: a message queued, then sent by a worker.',
        },
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
    transformObject: (document) =>
      withMessagesServer(
        withRateLimitHeaders('openapiObject' in document ? document.openapiObject : {}),
        config.messagesBaseUrl ?? local,
      ),
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
