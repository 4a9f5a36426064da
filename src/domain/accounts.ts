import type { Clock } from '../clock.js';
import {
  findAccountByEmail,
  findAccountById,
  insertAccount,
  listAccounts,
  updateAccountPlan,
  updatePasswordHash,
} from '../store/accounts-repository.js';
import { type Change, change, commit, decided } from '../store/change.js';
import type { ReadDb, Writer } from '../store/database.js';
import { type AccountRow, toIso } from '../store/tables.js';
import type { Passwords } from './passwords.js';
import { isPlan, type Limits, limitsFor, type Plan } from './plans.js';
import { closeOtherSessions } from './portal-sessions.js';
import { randomBase62 } from './random.js';
import { fail, ok, type Result } from './result.js';

/** Read-only: the one kept with a verified key is shared by every request that uses it. */
export interface Account {
  readonly id: string;
  readonly email: string;
  readonly plan: Plan;
  readonly limits: Limits;
  readonly createdAt: string;
}

export const PASSWORD_MIN_LENGTH = 12;
export const PASSWORD_MAX_LENGTH = 1024;

/** What is wrong with a new password, in the words both the API and the portal use. */
export function passwordProblem(password: string): string | undefined {
  const length = [...password].length;
  if (length < PASSWORD_MIN_LENGTH) {
    return `The password must be at least ${PASSWORD_MIN_LENGTH} characters long.`;
  }
  if (length > PASSWORD_MAX_LENGTH) {
    return `The password must be at most ${PASSWORD_MAX_LENGTH} characters long.`;
  }
  return undefined;
}

export function toAccount(row: AccountRow): Account {
  const plan: Plan = isPlan(row.plan) ? row.plan : 'free';
  return {
    id: row.id,
    email: row.email,
    plan,
    limits: limitsFor(plan, {
      perMinute: row.per_minute ?? undefined,
      perDay: row.per_day ?? undefined,
    }),
    createdAt: toIso(row.created_at),
  };
}

/** Emails compare case-insensitively: `Ann@Example.com` and `ann@example.com` are one account. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

export type SignUpOutcome = Result<Account, 'email_taken' | 'validation_failed'>;

/**
 * A new account on the Free plan, as a change. The password is hashed first, before the write,
 * which would otherwise hold a batch of others.
 */
export async function signUp(
  clock: Clock,
  passwords: Passwords,
  input: { email: string; password: string },
): Promise<Change<SignUpOutcome>> {
  const problem = passwordProblem(input.password);
  if (problem) return decided(fail('validation_failed', problem));
  const email = normalizeEmail(input.email);
  const row = {
    id: `acct_${randomBase62(16)}`,
    email,
    password_hash: await passwords.hash(input.password),
    plan: 'free' as const,
    per_minute: null,
    per_day: null,
    created_at: clock.now().toISOString(),
  };
  return {
    // One insert, ON CONFLICT DO NOTHING: its answer decides.
    options: { blind: true },
    work: async (tx): Promise<SignUpOutcome> =>
      (await insertAccount(tx, row))
        ? ok(toAccount(row))
        : fail(
            'email_taken',
            `An account with the email ${email} already exists; sign in with it, or sign up ` +
              'with another email.',
          ),
  };
}

/** Signs up and commits it: for the CLI, the demo and fixtures. */
export async function createAccount(
  store: Writer,
  clock: Clock,
  passwords: Passwords,
  input: { email: string; password: string },
): Promise<SignUpOutcome> {
  return commit(store, await signUp(clock, passwords, input));
}

/**
 * Sets a new password and signs out every portal session of the account but `keepSession`'s
 * (the browser that changed it; none when an operator resets it), in one transaction. API keys
 * are not touched: they are credentials of their own.
 */
export async function setPassword(
  store: Writer,
  passwords: Passwords,
  accountId: string,
  password: string,
  keepSession?: string,
): Promise<Result<{ signedOut: number }, 'validation_failed' | 'not_found'>> {
  const problem = passwordProblem(password);
  if (problem) return fail('validation_failed', problem);
  // Hashed before the write, which would otherwise hold a batch of others.
  const hash = await passwords.hash(password);
  return commit(
    store,
    change(async (tx) => {
      if (!(await updatePasswordHash(tx, accountId, hash))) {
        return fail('not_found', 'No such account.');
      }
      return ok({ signedOut: await closeOtherSessions(tx, accountId, keepSession) });
    }),
  );
}

/** Every account, oldest first: the operator's view (`animal-store accounts list`). */
export async function allAccounts(db: ReadDb): Promise<Account[]> {
  return (await listAccounts(db)).map(toAccount);
}

/** Checks an email and password; an unknown email costs as much time as a wrong password. */
const CONTROL = /\p{Cc}/u;

export async function authenticatePassword(
  db: ReadDb,
  passwords: Passwords,
  email: string,
  password: string,
): Promise<Result<Account, 'invalid_credentials'>> {
  // No account's email holds a control character (sign-up refuses them), and PostgreSQL
  // cannot even compare a NUL: such an email is looked up nowhere, and still costs a hash.
  const row = CONTROL.test(email) ? undefined : await findAccountByEmail(db, normalizeEmail(email));
  const matches = await passwords.verify(password, row?.password_hash);
  if (!row || !matches) return fail('invalid_credentials', 'The email or password is wrong.');
  return ok(toAccount(row));
}

export async function getAccount(db: ReadDb, id: string): Promise<Account | undefined> {
  const row = await findAccountById(db, id);
  return row && toAccount(row);
}

export async function findAccountIdByEmail(db: ReadDb, email: string): Promise<string | undefined> {
  return (await findAccountByEmail(db, normalizeEmail(email)))?.id;
}

/**
 * Tells every instance that an account's keys or plan changed, so what one keeps of them (a
 * verified key, with the account's limits) is read again from its next request: the shared
 * mode's `RateLimiter.changed(accountId, 'keys')`. Called once the change is committed.
 */
export type AnnounceKeysChanged = (accountId: string) => Promise<void>;

/** Where no instance keeps anything of the account yet (a fixture, the benchmark's seeding), or
 * another process changed SQLite (the CLI): the service sees such a commit within 10 ms. Never
 * for the service's own changes, which its key cache hears of only through `keysChanged`. */
export const nobodyToTell: AnnounceKeysChanged = async () => {};

/** Changes the plan, then (once it is committed) announces it. */
export async function setPlan(
  store: Writer,
  accountId: string,
  plan: Plan,
  custom: Partial<Limits>,
  announce: AnnounceKeysChanged,
): Promise<Result<Account, 'not_found' | 'validation_failed'>> {
  if (plan !== 'enterprise' && (custom.perMinute !== undefined || custom.perDay !== undefined)) {
    return fail('validation_failed', 'Custom limits can only be set on the enterprise plan.');
  }
  const account = await commit(store, {
    options: {},
    work: async (tx) => {
      const updated = await updateAccountPlan(
        tx,
        accountId,
        plan,
        custom.perMinute ?? null,
        custom.perDay ?? null,
      );
      return updated ? getAccount(tx, accountId) : undefined;
    },
    // Once committed, every instance is told (a failure to tell is logged by `announce`).
    committed: async (changed) => {
      if (changed) await announce(accountId);
    },
  });
  return account ? ok(account) : fail('not_found', `No account ${accountId}.`);
}
