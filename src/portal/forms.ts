import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Account } from '../domain/accounts.js';
import { seeOther } from './render.js';

/** A form field as one string; a missing or repeated field reads as empty. */
export function formText(body: unknown, name: string): string {
  const value = (body as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : '';
}

/** A preHandler for pages behind sign-in: without a live session, off to the sign-in page. */
export async function requireAccount(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const account = await request.server.portal.sessions.account(request);
  if (!account) {
    await seeOther(reply, '/portal/sign-in');
    return;
  }
  request.portalAccount = account;
}

/** The account `requireAccount` found; a page without that hook is a wiring bug. */
export function signedInAccount(request: FastifyRequest): Account {
  if (!request.portalAccount) throw new Error(`no requireAccount on ${request.routeOptions.url}`);
  return request.portalAccount;
}
