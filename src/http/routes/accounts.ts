import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { signUp } from '../../domain/accounts.js';
import { deprecatedCallCount } from '../../domain/deprecations.js';
import { callerOf } from '../auth.js';
import { answer, operation } from '../operation.js';
import { answerOf, created } from '../reply.js';
import { AccountView, CreatedAccount, NewAccount } from '../schemas/accounts.js';

/** Sign-up: no credentials needed. */
export const signUpRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { clock, passwords, idempotency } = app.ctx;

  app.post(
    '/accounts',
    operation('Accounts', {
      operationId: 'createAccount',
      summary: 'Create an account',
      description:
        'Creates an account on the Free plan. Then create an API key with `POST /v1/keys`, ' +
        'signing in with HTTP Basic (email and password).',
      auth: 'none',
      body: NewAccount,
      success: answer(201, CreatedAccount, 'The new account.'),
      errors: ['email_taken'],
    }),
    async (request, reply) => {
      return idempotency.commit(request, reply, signUp(clock, passwords, request.body), (result) =>
        answerOf(result, ({ id, email, plan, createdAt }) =>
          created({ id, email, plan, createdAt }),
        ),
      );
    },
  );
};

/** The caller's own account, seen through an API key. */
export const accountRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/account',
    operation('Accounts', {
      operationId: 'getAccount',
      summary: 'Get your account',
      description:
        'The account of the API key: plan, rate limits and the requests counted so far in ' +
        'the current windows (this request included; it counts like any other).',
      scope: 'account:read',
      success: answer(200, AccountView, 'Your account.'),
    }),
    async (request) => {
      const { id, email, plan, limits } = callerOf(request).account;
      const used = (name: string) =>
        request.rateLimit?.windows.find((w) => w.name === name)?.used ?? 0;
      return {
        id,
        email,
        plan,
        limits,
        usage: { minute: used('minute'), day: used('day') },
        deprecatedCalls: await deprecatedCallCount(app.ctx.database.reader, id),
      };
    },
  );
};
