import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { addApiKey, keySpec, listApiKeys, revokeKey } from '../../domain/api-keys.js';
import { callerOf } from '../auth.js';
import { answer, operation } from '../operation.js';
import { answerOf, created, unwrap } from '../reply.js';
import { ApiKeyList, CreatedApiKey, KeyParams, NewApiKey } from '../schemas/accounts.js';

/** Key management, signed in with email and password (HTTP Basic). */
export const keyRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { database, clock, config, idempotency } = app.ctx;
  const { reader } = database;

  app.post(
    '/keys',
    operation('API keys', {
      operationId: 'createApiKey',
      summary: 'Create an API key',
      description:
        'The response holds the secret key: no other answer shows it, but a retry of this ' +
        'request with its Idempotency-Key (within 24 hours), which gets this answer again. ' +
        'The key is stored only as a hash; the kept answer is encrypted under the server key. ' +
        'With `scopes`, the key may do only what they name (least privilege); without, it ' +
        'has full access to the account. A `publishable` key (`as_pk_…`) is for web pages: ' +
        'it reads the catalogue, from its `allowedOrigins` only, with limits of its own.',
      auth: 'basic',
      body: Type.Optional(NewApiKey),
      success: answer(201, CreatedApiKey, 'The new key, with its secret.'),
      errors: ['key_limit_reached'],
    }),
    async (request, reply) => {
      const { account } = callerOf(request);
      const spec = unwrap(keySpec(request.body ?? {}));
      // The secret is in the answer: kept, for a retry with its key, only sealed under a key
      // derived from the server's (src/http/idempotency.ts).
      return idempotency.commit(
        request,
        reply,
        addApiKey(clock, config.env, account.id, spec),
        (result) =>
          answerOf(result, ({ key, secret }) =>
            created({
              id: key.id,
              name: key.name,
              type: key.type,
              key: secret,
              prefix: key.prefix,
              scopes: key.scopes,
              allowedOrigins: key.allowedOrigins,
              createdAt: key.createdAt,
            }),
          ),
      );
    },
  );

  app.get(
    '/keys',
    operation('API keys', {
      operationId: 'listApiKeys',
      summary: 'List API keys',
      description: 'The live keys of the account, without their secrets.',
      auth: 'basic',
      success: answer(200, ApiKeyList, 'The live keys.'),
    }),
    async (request) => listApiKeys(reader, callerOf(request).account.id),
  );

  app.delete(
    '/keys/:keyId',
    operation('API keys', {
      operationId: 'revokeApiKey',
      summary: 'Revoke an API key',
      description: 'The key is refused (401) from the next request on.',
      auth: 'basic',
      params: KeyParams,
      success: answer(204, null, 'Revoked.'),
      errors: ['not_found'],
    }),
    async (request, reply) => {
      const { account } = callerOf(request);
      unwrap(
        await revokeKey(database, clock, account.id, request.params.keyId, app.ctx.keysChanged),
      );
      return reply.code(204).send(null);
    },
  );
};
