import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { callerOf } from '../http/auth.js';
import { answer, operation } from '../http/operation.js';
import { answerOf } from '../http/reply.js';
import { resetSandbox } from './domain.js';
import { SandboxReset, SandboxResetQuery } from './schemas.js';

/** `POST /v1/sandbox/reset`: the account's test data removed, and a sample added if asked. */
export const sandboxRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { clock, config, idempotency } = app.ctx;

  app.post(
    '/sandbox/reset',
    operation('Sandbox', {
      operationId: 'resetSandbox',
      summary: 'Reset the test data',
      description:
        "Removes the account's catalogue, orders, messages, events and webhook deliveries in " +
        'one transaction; keeps its keys, webhook endpoints and request log. Ids go on from ' +
        'where they were: none is given again. With `seed=sample`, adds a sample catalogue. ' +
        'Records `sandbox.reset`. Test keys only: a production instance answers ' +
        '`403 sandbox_only`.',
      scope: 'sandbox:write',
      config: { writes: 'changes' },
      querystring: SandboxResetQuery,
      success: answer(200, SandboxReset, 'What was removed, and added.'),
      errors: ['sandbox_only'],
    }),
    async (request, reply) => {
      const { account } = callerOf(request);
      return idempotency.commit(
        request,
        reply,
        resetSandbox(clock, config.env, account.id, request.query.seed === 'sample'),
        (result) => answerOf(result, (reset) => ({ status: 200, body: reset })),
      );
    },
  );
};
