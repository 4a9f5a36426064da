import type { FastifyInstance } from 'fastify';

/**
 * A Postman collection (v2.1) generated from the OpenAPI document by Postman's own converter
 * (openapi-to-postmanv2), served at GET /v1/postman.json. Made once per process, on first ask
 * (the converter takes a second and is loaded only then), and finished here:
 *
 * - variables `baseUrl`, `messagesUrl` (the quickstart's own server), `apiKey`, and `email` /
 *   `password` for key management;
 * - the collection is authenticated with `Bearer {{apiKey}}`; key management with HTTP Basic
 *   (`{{email}}`, `{{password}}`); sign-up with nothing;
 * - request bodies, path variables and query values are the document's examples (optional query
 *   parameters stay disabled); `Idempotency-Key` is on, a fresh `{{$guid}}` on each send.
 */

type Json = Record<string, unknown>;

interface PostmanVariable {
  key: string;
  value: string;
  type?: string;
  description?: string;
}
interface PostmanQuery {
  key: string;
  value: string;
  disabled?: boolean;
}
interface PostmanRequest {
  method: string;
  url: {
    host?: string[];
    path?: string[];
    query?: PostmanQuery[];
    variable?: PostmanVariable[];
  };
  header?: Array<{ key: string; value: string; disabled?: boolean }>;
  body?: { mode?: string; raw?: string };
  auth?: unknown;
}
interface PostmanItem {
  name: string;
  item?: PostmanItem[];
  request?: PostmanRequest;
}
export interface PostmanCollection {
  info: Json;
  item: PostmanItem[];
  variable?: PostmanVariable[];
  auth?: unknown;
}

interface Operation {
  security?: Array<Record<string, string[]>>;
  parameters?: Json[];
  requestBody?: { content?: Record<string, { example?: unknown }> };
}

interface Document {
  servers?: Array<{ url: string }>;
  paths: Record<string, Json & { servers?: Array<{ url: string }> }>;
  components?: { parameters?: Record<string, Json> };
}

const MESSAGES = 'messagesUrl';

/** The operation a converted request stands for: `/pets/:petId` is `/pets/{petId}`. */
function operationOf(doc: Document, request: PostmanRequest): Operation | undefined {
  const path = `/${(request.url.path ?? []).map((p) => p.replace(/^:(.+)$/, '{$1}')).join('/')}`;
  return doc.paths[path]?.[request.method.toLowerCase()] as Operation | undefined;
}

function parametersOf(doc: Document, operation: Operation): Json[] {
  return (operation.parameters ?? []).map((p) => {
    const ref = typeof p.$ref === 'string' ? p.$ref.split('/').pop() : undefined;
    return ref ? (doc.components?.parameters?.[ref] ?? p) : p;
  });
}

const text = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value));

function finishRequest(doc: Document, request: PostmanRequest): void {
  const operation = operationOf(doc, request);
  if (!operation) return;
  // The converter names each per-path server's address a variable of its own.
  if (request.url.host?.some((h) => h !== '{{baseUrl}}')) request.url.host = [`{{${MESSAGES}}}`];

  const schemes = (operation.security ?? []).flatMap((s) => Object.keys(s));
  if (schemes.includes('basicAuth')) {
    request.auth = {
      type: 'basic',
      basic: [
        { key: 'username', value: '{{email}}', type: 'string' },
        { key: 'password', value: '{{password}}', type: 'string' },
      ],
    };
  } else if (schemes.length === 0) {
    request.auth = { type: 'noauth' };
  } else {
    // Inherited from the collection: Bearer {{apiKey}}.
    delete request.auth;
  }

  const examples = new Map<string, unknown>();
  for (const parameter of parametersOf(doc, operation)) {
    if (parameter.example !== undefined) examples.set(String(parameter.name), parameter.example);
  }
  for (const variable of request.url.variable ?? []) {
    if (examples.has(variable.key)) variable.value = text(examples.get(variable.key));
  }
  for (const query of request.url.query ?? []) {
    query.value = examples.has(query.key) ? text(examples.get(query.key)) : '';
  }
  for (const header of request.header ?? []) {
    if (header.key === 'Idempotency-Key') {
      header.value = '{{$guid}}';
      header.disabled = false;
    }
  }
  const example = operation.requestBody?.content?.['application/json']?.example;
  if (request.body && example !== undefined) {
    request.body.raw = JSON.stringify(example, null, 2);
  }
}

function finishItems(doc: Document, items: PostmanItem[]): void {
  for (const item of items) {
    if (item.request) finishRequest(doc, item.request);
    if (item.item) finishItems(doc, item.item);
  }
}

/** The collection of the document `doc` (an OpenAPI 3.1 object, not changed). */
export async function postmanCollection(document: object): Promise<PostmanCollection> {
  const doc = document as Document;
  const { default: converter } = await import('openapi-to-postmanv2');
  const collection = await new Promise<PostmanCollection>((done, fail) => {
    converter.convert(
      { type: 'json', data: structuredClone(document) as never },
      {
        folderStrategy: 'Tags',
        parametersResolution: 'Example',
        enableOptionalParameters: false,
        alwaysInheritAuthentication: true,
        includeAuthInfoInExample: false,
      },
      (error, result) => {
        const data = result?.output?.[0]?.data as PostmanCollection | undefined;
        if (error || !result?.result || !data) {
          fail(error ?? new Error(`openapi-to-postmanv2: ${result?.reason ?? 'no collection'}`));
        } else done(data);
      },
    );
  });
  finishItems(doc, collection.item);
  const messages = Object.entries(doc.paths).find(([path]) => path.startsWith('/messages'))?.[1]
    .servers?.[0]?.url;
  collection.variable = [
    {
      key: 'baseUrl',
      value: doc.servers?.[0]?.url ?? '',
      type: 'string',
      description: 'The API, with its /v1 prefix.',
    },
    {
      key: MESSAGES,
      value: messages ?? '',
      type: 'string',
      description: 'The quickstart messages server (no prefix).',
    },
    {
      key: 'apiKey',
      value: '',
      type: 'secret',
      description: 'Your API key (as_test_… or as_live_…), from the portal or POST /v1/keys.',
    },
    {
      key: 'email',
      value: '',
      type: 'string',
      description: 'Your sign-in email (key management).',
    },
    { key: 'password', value: '', type: 'secret', description: 'Your password (key management).' },
  ];
  collection.auth = {
    type: 'bearer',
    bearer: [{ key: 'token', value: '{{apiKey}}', type: 'string' }],
  };
  return collection;
}

/** GET /v1/postman.json: no key needed, not counted, like the OpenAPI document. */
export function registerPostman(app: FastifyInstance): void {
  let made: Promise<string> | undefined;
  app.get('/v1/postman.json', { schema: { hide: true } }, async (request, reply) => {
    made ??= postmanCollection(app.swagger()).then((collection) => JSON.stringify(collection));
    let body: string;
    try {
      body = await made;
    } catch (error) {
      made = undefined;
      request.log.error({ err: error }, 'the Postman collection could not be made');
      throw error;
    }
    return reply
      .type('application/json; charset=utf-8')
      .header('content-disposition', 'inline; filename="animal-store.postman_collection.json"')
      .send(body);
  });
}
