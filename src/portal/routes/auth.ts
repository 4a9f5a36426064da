import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { authenticatePassword, signUp } from '../../domain/accounts.js';
import type { ApiError } from '../../errors.js';
import { addressBlock } from '../../http/client-address.js';
import { answerOf, created } from '../../http/reply.js';
import { NewAccount } from '../../http/schemas/accounts.js';
import { checkBody } from '../../http/validation.js';
import { formText } from '../forms.js';
import { pageContext, seeOther, sendHtml } from '../render.js';
import { type CredentialsForm, signInPage, signUpPage } from '../views/auth.js';

type FormPage = typeof signInPage;

/** Sign up, sign in, sign out. Every form carries a CSRF token, sign-in and sign-out included. */
export async function authPages(app: FastifyInstance): Promise<void> {
  const { database, clock, passwords, idempotency } = app.ctx;
  const { sessions, throttle } = app.portal;
  const csrf = { preValidation: app.csrfProtection };

  const show = (
    request: FastifyRequest,
    reply: FastifyReply,
    page: FormPage,
    form: CredentialsForm,
    status: number,
  ) => sendHtml(reply, page(pageContext(request, reply), form), status);

  const refused = (
    request: FastifyRequest,
    reply: FastifyReply,
    page: FormPage,
    email: string,
    error: ApiError,
  ) => {
    if (error.headers) reply.headers(error.headers);
    const notice = { kind: 'error' as const, text: error.message };
    return show(request, reply, page, { email, notice }, error.status);
  };

  // Signed-in visitors have nothing to do on these two pages.
  const signedOutOnly = async (request: FastifyRequest, reply: FastifyReply) => {
    if (await sessions.account(request)) await seeOther(reply, '/portal/account');
  };

  app.get('/sign-in', { preHandler: signedOutOnly }, (request, reply) => {
    const signedOut = (request.query as Record<string, unknown>)['signed-out'] !== undefined;
    const notice = signedOut
      ? { kind: 'success' as const, text: 'You are signed out.' }
      : undefined;
    return show(request, reply, signInPage, { notice }, 200);
  });
  app.get('/sign-up', { preHandler: signedOutOnly }, (request, reply) =>
    show(request, reply, signUpPage, {}, 200),
  );

  app.post('/sign-up', csrf, async (request, reply) => {
    const email = formText(request.body, 'email').trim();
    const password = formText(request.body, 'password');
    // The API's own schema, so the rules and their words are the API's.
    const problem = (label: string, schema: object, value: string) => {
      const detail = checkBody(schema, value)[0];
      return detail && `${label} ${detail.message}.`;
    };
    const errors = {
      email: problem('Email', NewAccount.properties.email, email),
      password: problem('Password', NewAccount.properties.password, password),
    };
    if (errors.email || errors.password) {
      const notice = { kind: 'error' as const, text: 'Check the fields marked below.' };
      return show(request, reply, signUpPage, { email, errors, notice }, 400);
    }
    const limited = await throttle.formPosted(request.ip);
    if (limited) return refused(request, reply, signUpPage, email, limited);
    // Sent twice (a double click), the form signs up once and both land signed in.
    const { answer } = await idempotency.form(
      request,
      `ip:${addressBlock(request.ip)}`,
      signUp(clock, passwords, { email, password }),
      (result) => answerOf(result, ({ id }) => created({ id })),
    );
    if (answer.status >= 400) {
      const notice = { kind: 'error' as const, text: (answer.body as { message: string }).message };
      return show(request, reply, signUpPage, { email, notice }, answer.status);
    }
    await sessions.start(request, reply, (answer.body as { id: string }).id);
    return seeOther(reply, '/portal/keys?welcome=1');
  });

  app.post('/sign-in', csrf, async (request, reply) => {
    const email = formText(request.body, 'email').trim();
    const password = formText(request.body, 'password');
    if (email === '' || password === '') {
      const errors = {
        email: email === '' ? 'Enter your email.' : undefined,
        password: password === '' ? 'Enter your password.' : undefined,
      };
      const notice = { kind: 'error' as const, text: 'Check the fields marked below.' };
      return show(request, reply, signInPage, { email, errors, notice }, 400);
    }
    const limited = await throttle.formPosted(request.ip);
    if (limited) return refused(request, reply, signInPage, email, limited);
    // The same words whether the email is unknown or the password wrong: no account lookup.
    const result = await throttle.verify(request.ip, email, () =>
      authenticatePassword(database.reader, passwords, email, password),
    );
    if ('refused' in result) return refused(request, reply, signInPage, email, result.refused);
    if (!result.ok) {
      const notice = { kind: 'error' as const, text: result.message };
      return show(request, reply, signInPage, { email, notice }, 401);
    }
    await sessions.start(request, reply, result.value.id);
    return seeOther(reply, '/portal/account');
  });

  app.post('/sign-out', csrf, async (request, reply) => {
    await sessions.end(request, reply);
    return seeOther(reply, '/portal/sign-in?signed-out=1');
  });
}
