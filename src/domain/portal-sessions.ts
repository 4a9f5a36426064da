import { randomBytes } from 'node:crypto';
import type { Clock } from '../clock.js';
import { sha256 } from '../digest.js';
import type { ReadDb, Tx } from '../store/database.js';
import {
  deleteAccountSessions,
  deleteExpiredSessions,
  deleteSession,
  findSessionAccount,
  insertSession,
} from '../store/portal-sessions-repository.js';
import type { AccountRow } from '../store/tables.js';

/** A portal session lasts a week from sign-in, however it is used; then the person signs in
 * again. */
export const SESSION_TTL_MS = 7 * 24 * 3_600_000;

export interface OpenedSession {
  /** The cookie's value (before signing): 256 random bits. */
  token: string;
  expiresAt: Date;
}

function hashToken(token: string): string {
  return sha256(token);
}

/** Starts a session for an account that has just proved who it is. */
export async function openSession(tx: Tx, clock: Clock, accountId: string): Promise<OpenedSession> {
  const now = clock.now();
  const token = randomBytes(32).toString('base64url');
  const expiresAt = new Date(now.getTime() + SESSION_TTL_MS);
  // Sign-ins are rare, so each one also clears the sessions that have run out.
  await deleteExpiredSessions(tx, now.toISOString());
  await insertSession(tx, {
    id_hash: hashToken(token),
    account_id: accountId,
    created_at: now.toISOString(),
    expires_at: expiresAt.toISOString(),
  });
  return { token, expiresAt };
}

/** The row of the account signed in with this token, if the session is still open
 * (`toAccount`, src/domain/accounts.ts, makes it an Account). */
export function sessionAccount(
  db: ReadDb,
  clock: Clock,
  token: string,
): Promise<AccountRow | undefined> {
  return findSessionAccount(db, hashToken(token), clock.now().toISOString());
}

/** Ends a session on every instance at once: the row is gone. */
export function closeSession(tx: Tx, token: string): Promise<void> {
  return deleteSession(tx, hashToken(token));
}

/** Ends every session of the account except the one with `keepToken` (the browser that
 * changed the password stays signed in). */
export function closeOtherSessions(tx: Tx, accountId: string, keepToken?: string): Promise<number> {
  return deleteAccountSessions(
    tx,
    accountId,
    keepToken === undefined ? undefined : hashToken(keepToken),
  );
}
