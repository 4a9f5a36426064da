import type { CookieSerializeOptions } from '@fastify/cookie';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import { sha256 } from '../digest.js';
import { type Account, setPassword, toAccount } from '../domain/accounts.js';
import type { Passwords } from '../domain/passwords.js';
import { closeSession, openSession, sessionAccount } from '../domain/portal-sessions.js';
import { commit } from '../store/change.js';
import type { Database } from '../store/database.js';

export const PORTAL_PATH = '/portal';
const SESSION_COOKIE = 'as_session';

/** The cookie options every portal cookie shares: only our pages, never scripts, never sent
 * on cross-site subrequests or posts, HTTPS-only outside development. */
export function portalCookie(config: Config): CookieSerializeOptions {
  return {
    path: PORTAL_PATH,
    httpOnly: true,
    sameSite: 'lax',
    secure: config.env !== 'development',
    signed: true,
  };
}

/**
 * Portal sign-in state: a signed cookie holding a random token, whose hash names a row in
 * `portal_sessions`. Signing out deletes the row, so the cookie is dead on every instance.
 */
export class PortalSessions {
  constructor(
    private readonly database: Pick<Database, 'reader' | 'write'>,
    private readonly clock: Clock,
    private readonly config: Config,
    private readonly passwords: Passwords,
  ) {}

  /** Signs the browser in as the account, ending any session it held before. */
  async start(request: FastifyRequest, reply: FastifyReply, accountId: string): Promise<void> {
    const previous = this.token(request);
    const session = await commit(this.database, {
      options: {},
      work: async (tx) => {
        if (previous) await closeSession(tx, previous);
        return openSession(tx, this.clock, accountId);
      },
    });
    reply.setCookie(SESSION_COOKIE, session.token, {
      ...portalCookie(this.config),
      expires: session.expiresAt,
    });
  }

  /** The signed-in account, or undefined without a live session. */
  async account(request: FastifyRequest): Promise<Account | undefined> {
    const token = this.token(request);
    const row = token ? await sessionAccount(this.database.reader, this.clock, token) : undefined;
    return row && toAccount(row);
  }

  /** Sets a new password and signs out every other browser of the account; this one stays. */
  changePassword(request: FastifyRequest, accountId: string, password: string) {
    return setPassword(this.database, this.passwords, accountId, password, this.token(request));
  }

  async end(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const token = this.token(request);
    if (token) {
      await commit(this.database, {
        work: (tx) => closeSession(tx, token),
        options: { blind: true },
      });
    }
    reply.clearCookie(SESSION_COOKIE, portalCookie(this.config));
  }

  /**
   * What ties a CSRF token to this browser's session (a constant when signed out): a token
   * made for one session is refused with another, so a planted CSRF cookie forges nothing.
   */
  csrfBinding(request: FastifyRequest): string {
    const token = this.token(request);
    return token ? sha256(`csrf:${token}`, 'base64url') : 'signed-out';
  }

  /** The session cookie as the browser sent it (signed, not checked): a key for what is kept
   * of a session for a moment, never a proof of one. */
  cookieOf(request: FastifyRequest): string | undefined {
    return request.cookies?.[SESSION_COOKIE] || undefined;
  }

  private token(request: FastifyRequest): string | undefined {
    const raw = request.cookies?.[SESSION_COOKIE];
    if (!raw) return undefined;
    const unsigned = request.unsignCookie(raw);
    return unsigned.valid && unsigned.value ? unsigned.value : undefined;
  }
}
