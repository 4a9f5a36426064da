import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Capability } from '../../capability.js';
import { authenticatePassword } from '../../domain/accounts.js';
import { keyPrefixFor, listApiKeys } from '../../domain/api-keys.js';
import { deprecatedCallCount } from '../../domain/deprecations.js';
import type { ApiError } from '../../errors.js';
import { formText, requireAccount, signedInAccount } from '../forms.js';
import { pageContext, sendHtml } from '../render.js';
import { type AccountView, accountPage, type PasswordForm } from '../views/account.js';
import { keyKind } from '../views/keys.js';
import { limitState } from './limit-state.js';

/** What a capability tells the account page (src/capability.ts, `notices`). */
export type AccountNotices = NonNullable<Capability['notices']>;

/**
 * Plan, limits, the current windows' usage, the deprecated-call count, a password change, and
 * what the capabilities have to tell the account (an endpoint the service disabled).
 */
export async function accountPages(
  app: FastifyInstance,
  { notices }: { notices: readonly AccountNotices[] },
): Promise<void> {
  const { database, passwords, limiter, outages, config } = app.ctx;
  const { sessions, throttle } = app.portal;
  const kind = keyKind(keyPrefixFor(config.env));

  const show = async (
    request: FastifyRequest,
    reply: FastifyReply,
    password: PasswordForm = {},
    status = 200,
  ) => {
    const account = signedInAccount(request);
    const [deprecatedCalls, keys, told] = await Promise.all([
      deprecatedCallCount(database.reader, account.id),
      listApiKeys(database.reader, account.id),
      Promise.all(notices.map((read) => read(database.reader, account.id))),
    ]);
    // Reading the counters counts nothing: looking at the page costs no quota.
    const limits = await limitState(limiter, outages, account, keys);
    const view: AccountView = {
      account,
      limits,
      deprecatedCalls,
      keys,
      kind,
      password,
      notices: told.flat(),
    };
    return sendHtml(reply, accountPage(pageContext(request, reply), view), status);
  };

  app.get('/account', { preHandler: requireAccount }, (request, reply) => show(request, reply));

  app.post(
    '/account/password',
    { preValidation: app.csrfProtection, preHandler: requireAccount },
    async (request, reply) => {
      const account = signedInAccount(request);
      const current = formText(request.body, 'current_password');
      const next = formText(request.body, 'new_password');
      if (current === '' || next === '') {
        return show(
          request,
          reply,
          {
            errors: {
              current: current === '' ? 'Enter your current password.' : undefined,
              next: next === '' ? 'Enter a new password.' : undefined,
            },
          },
          400,
        );
      }
      // Guessing the current password here is throttled like signing in.
      const refuse = (error: ApiError) => {
        if (error.headers) reply.headers(error.headers);
        return show(request, reply, { notice: error.message }, error.status);
      };
      const limited = await throttle.formPosted(request.ip);
      if (limited) return refuse(limited);
      const checked = await throttle.verify(request.ip, account.email, () =>
        authenticatePassword(database.reader, passwords, account.email, current),
      );
      if ('refused' in checked) return refuse(checked.refused);
      if (!checked.ok) {
        return show(request, reply, { errors: { current: 'This is not your password.' } }, 401);
      }
      const changed = await sessions.changePassword(request, account.id, next);
      if (!changed.ok) return show(request, reply, { errors: { next: changed.message } }, 400);
      const others = changed.value.signedOut;
      return show(request, reply, {
        done:
          others === 0
            ? 'Your password is changed.'
            : `Your password is changed, and ${others} other ${others === 1 ? 'browser was' : 'browsers were'} signed out.`,
      });
    },
  );
}
