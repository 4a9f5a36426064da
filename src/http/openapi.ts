import { readFileSync } from 'node:fs';
import swagger from '@fastify/swagger';
import scalar from '@scalar/fastify-api-reference';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TSchema } from 'typebox';
import type { Config } from '../config.js';
import { ERRORS } from '../errors.js';
import { type DocumentParts, finishDocument, OPTIONAL_BODY_KEY } from './openapi-document.js';
import { registerPostman } from './postman.js';
import { type ReferenceDocument, referencePage } from './reference-page.js';
import { docsPageHeaders } from './security-headers.js';
import { IMMUTABLE, REVALIDATE, StaticAsset } from './static-assets.js';

const ERROR_TABLE = Object.entries(ERRORS)
  .map(([code, { status, description }]) => `| \`${code}\` | ${status} | ${description} |`)
  .join('\n');

/** What /docs shows above the operations; `api` is the address the SDK's example names. */
const description = (
  api: string,
) => `A pet-store API: animals, their categories, and accounts with API keys.

Every catalogue operation needs an API key: \`Authorization: Bearer <API_KEY>\`. Get one in
the developer portal at \`/portal\`, or create an account with \`POST /v1/accounts\`, then a
key with \`POST /v1/keys\` (HTTP Basic with your email and password).

A [Postman collection](/v1/postman.json) of every operation is generated from this document.
Set its \`apiKey\` (and \`baseUrl\`, if not this server) and run it: it walks every operation
in that key's account in a working order, testing each answer, signs nobody up and manages no
key, and removes everything it made (what it did stays in the account's events and request
log). Run with no key, it first signs up a throwaway account, which stays.

Lists are paginated by cursor: the body is a bare JSON array and the next page, if any, is in
the \`Link: <…>; rel="next"\` header (RFC 8288).

## SDK

\`@animal-store/client\` is the TypeScript client, typed from this document, for Node.js 22.12 or
later and browsers. It waits as the rate-limit headers say, sends every POST with an
\`Idempotency-Key\` that its retries repeat, follows pages and throws errors by kind. Once
published, install it with \`npm install @animal-store/client\`; until then, in a checkout of the
service's repository, \`npm pack -w @animal-store/client\` writes a tarball to install. Then:

\`\`\`ts
import { createClient } from '@animal-store/client';

const client = createClient({ apiKey: process.env.ANIMAL_STORE_KEY, baseUrl: '${api}' });
const dogs = await client.categories.create({ name: 'Dogs' });
await client.pets.create({ name: 'Rex', categoryId: dogs.id });
for await (const pet of client.pets.list({ status: 'available' })) console.log(pet.id, pet.name);
\`\`\`

## Deprecations

\`GET /v1/pets/{petId}\` is deprecated and is removed on 5 December 2030: read pets by id with
\`GET /v1/pets?id={petId}\` (up to 100 ids: \`?id=1&id=7\`, with \`status\` if you like).
Until then its answers carry \`Deprecation\` (RFC 9745), \`Sunset\`
(RFC 8594) and \`Link\` headers; from then on it answers \`410 endpoint_removed\`. Breaking
changes only ever come in a new version prefix, announced at least 12 months ahead this way.

## Retrying safely

Every POST takes an optional \`Idempotency-Key\` header (1 to 255 printable ASCII characters;
send a new UUID for each new request). Sent again with the same request within 24 hours, it is
answered with the first answer and \`Idempotent-Replayed: true\`, and nothing happens twice; with
another request, \`422 idempotency_key_mismatch\`; while the first is still running,
\`409 idempotency_key_in_use\` with \`Retry-After\`. Only successes are kept: a refused request
(4xx) or a failure on our side (5xx) changed nothing and may be sent again with the same key,
but for \`503 outcome_unknown\` (a write committed and not confirmed): it may be stored, so send
it again only with the same key, which replays it if it was.

## Errors

Every error has the body \`{code, message, status}\`, \`status\` equal to the HTTP status;
validation errors add \`details\`.

## Rate limits

Requests are counted per account (all its keys together) in two fixed windows at once, the
current UTC minute and the current UTC day: Free 60/1,000, Pro 300/10,000, Business
1,000/100,000, Enterprise custom. A request is accepted only when both windows have room; a
refused one counts in neither. Every answer to a counted request carries
\`X-RateLimit-Limit\`, \`X-RateLimit-Remaining\` and \`X-RateLimit-Reset\` for the window with
the fewest requests left, plus the IETF \`RateLimit-Policy\` and \`RateLimit\` fields (marked
required on the statuses that always come after the count). Over the limit the answer is
\`429 rate_limited\` with \`Retry-After\` in seconds. Back off exponentially: a key that sends
more than 20 requests while limited in one window is banned for 15 minutes
(\`429 key_banned\`). Requests without valid credentials are limited per client IP with the
Free numbers.

| code | status | meaning |
|---|---|---|
${ERROR_TABLE}
`;

/** The seed's two environments, and in development the local listener. */
function servers(config: Config, listening: string) {
  // `x-internal: false`: every server listed is meant for the public (OWASP API9).
  const list: Array<{ url: string; description: string; 'x-internal': boolean }> = [];
  const add = (url: string, description: string) =>
    list.push({ url, description, 'x-internal': false });
  if (config.publicBaseUrl) add(config.publicBaseUrl, 'Production');
  if (config.stagingBaseUrl) add(config.stagingBaseUrl, 'Staging (as_test_ keys)');
  if (config.env === 'development') add(`${listening}/v1`, 'This server (local development)');
  return list;
}

/** The OpenAPI 3.1 document, generated from the route schemas, and the docs page at /docs. */
export async function registerOpenApi(
  app: FastifyInstance,
  config: Config,
  /** What the capabilities add: their schemas, events and delivery headers. */
  parts?: DocumentParts,
): Promise<void> {
  const local = `http://${config.host}:${config.port}`;
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Animal Store API',
        version: '1.0.0',
        description: description(config.publicBaseUrl ?? `${local}/v1`),
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
          name: 'Events',
          description: "What happened to the account's pets, orders and messages, to poll.",
        },
        {
          name: 'Webhooks',
          description: 'Endpoints that events are POSTed to, signed; their delivery logs.',
        },
        {
          name: 'Requests',
          description:
            "The account's request log: its API requests of the last 7 days as they were " +
            'answered, and their counts per hour.',
        },
        {
          name: 'Messages',
          description: 'The quickstart example: a message queued, then sent by a worker.',
        },
        { name: 'Sandbox', description: "Reset an account's test data; add a sample catalogue." },
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
      finishDocument(
        'openapiObject' in document ? document.openapiObject : {},
        config.messagesBaseUrl ?? local,
        parts,
      ),
    // Operations live under /v1 and the servers carry the prefix, so paths are written without
    // it. A body that may be left out is marked so (TypeBox's Optional is not in the JSON).
    transform: ({ schema, url, route }) => {
      const body = schema?.body as (TSchema & { '~optional'?: boolean }) | undefined;
      return {
        schema:
          body?.['~optional'] === true
            ? { ...schema, body: { ...body, [OPTIONAL_BODY_KEY]: true } }
            : schema,
        url: url.startsWith('/v1/') ? url.slice(3) : url,
        route,
      };
    },
  });

  // The document is fixed once the routes are: it is serialised, hashed and compressed once.
  let served: StaticAsset | undefined;
  const document = () =>
    (served ??= new StaticAsset(
      Buffer.from(JSON.stringify(app.swagger())),
      'application/json; charset=utf-8',
    ));
  const sendDocument = (request: FastifyRequest, reply: FastifyReply) =>
    document().send(request, reply, REVALIDATE);
  app.get('/v1/openapi.json', { schema: { hide: true } }, sendDocument);
  registerPostman(app);

  // The docs page is the reference rendered here (src/http/reference-page.ts), made once from
  // the document, compressed and revalidated as the document is; the explorer, Scalar with its
  // "Test Request", is at /docs/try/ (docs/decisions/0082-docs-page-rendered.md).
  // Neither loads anything from anywhere but this service (issue 22): Scalar's hosted
  // features are off (its AI agent, the sharing/developer toolbar, telemetry; this version,
  // the last whose packages accept Node 20, has no MCP generation),
  // fonts are the system's, and the favicon is ours. test/process/docs-browser.test.ts records
  // every request the explorer makes in Chromium, "Test Request" included.
  // The pages may not be framed (clickjacking) and run only their own scripts: their scope's
  // hooks say so (a Content Security Policy with its inline script's hash).
  // Scalar's script comes from memory, compressed, named by its hash, so a browser keeps it for
  // good (docs/decisions/0076-static-assets.md).
  let reference: StaticAsset | undefined;
  const sendReference = (request: FastifyRequest, reply: FastifyReply) => {
    reference ??= new StaticAsset(
      Buffer.from(referencePage(app.swagger() as unknown as ReferenceDocument)),
      'text/html; charset=utf-8',
    );
    return reference.send(request, reply, REVALIDATE);
  };
  const headers = docsPageHeaders(config);
  const script = scalarScript();
  const scriptPath = `js/scalar.${script.hash}.js`;
  await app.register(async (docs) => {
    docs.addHook('onRequest', headers.onRequest);
    docs.addHook('onRequest', (_request, reply, done) => {
      reply.header('cache-control', REVALIDATE);
      done();
    });
    docs.addHook('onSend', headers.onSend);
    docs.get('/docs', { schema: { hide: true } }, sendReference);
    docs.get('/docs/', { schema: { hide: true } }, sendReference);
    // Scalar's own routes for its script (under the name it always had) and the document,
    // answered as the hashed script is.
    docs.addHook('onRoute', (route) => {
      if (route.url === `${EXPLORER}/js/scalar.js`) {
        route.handler = (request, reply) => script.send(request, reply, REVALIDATE);
      } else if (route.url === `${EXPLORER}/openapi.json`) {
        route.handler = sendDocument;
      }
    });
    docs.get(`${EXPLORER}/${scriptPath}`, { schema: { hide: true } }, (request, reply) =>
      script.send(request, reply, IMMUTABLE),
    );
    await docs.register(scalar, {
      routePrefix: EXPLORER,
      configuration: {
        pageTitle: 'Animal Store API: explorer',
        cdn: scriptPath,
        favicon: '/favicon.svg',
        withDefaultFonts: false,
        telemetry: false,
        agent: { disabled: true },
        showDeveloperTools: 'never',
      },
    });
  });
}

/** Where Scalar's explorer is served. */
const EXPLORER = '/docs/try';

let scalarBundle: StaticAsset | undefined;

/** The script Scalar's plugin serves (its browser bundle, megabytes), read once per process. */
function scalarScript(): StaticAsset {
  scalarBundle ??= new StaticAsset(
    readFileSync(new URL('js/standalone.js', import.meta.resolve('@scalar/fastify-api-reference'))),
    'application/javascript; charset=utf-8',
  );
  return scalarBundle;
}
