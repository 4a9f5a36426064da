import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Account } from '../domain/accounts.js';
import type { Html } from '../html.js';
import type { PageContext } from './views/layout.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The account signed in to the portal, once a page has looked it up. */
    portalAccount: Account | null;
  }
}

/** What every page needs: who is signed in, and a CSRF token for its forms. */
export function pageContext(request: FastifyRequest, reply: FastifyReply): PageContext {
  // A request refused before its cookies were read (a bad Host) gets a page without forms.
  const userInfo = request.server.portal.sessions.csrfBinding(request);
  const csrf = request.cookies ? reply.generateCsrf({ userInfo }) : '';
  return { account: request.portalAccount ?? undefined, csrf };
}

/** A page: HTML, never stored by a cache (pages show secrets and who is signed in). */
export function sendHtml(reply: FastifyReply, page: Html, status = 200): FastifyReply {
  return reply
    .code(status)
    .header('cache-control', 'no-store')
    .type('text/html; charset=utf-8')
    .send(page.value);
}

/** After a form that changed something: show the next page with a GET (Post/Redirect/Get). */
export function seeOther(reply: FastifyReply, location: string): FastifyReply {
  return reply.header('cache-control', 'no-store').redirect(location, 303);
}
