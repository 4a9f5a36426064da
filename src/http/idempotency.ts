import { createHash, createHmac } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Clock } from '../clock.js';
import { openWith, sealWith } from '../domain/secret-box.js';
import { ApiError, RETRY_SOON } from '../errors.js';
import { type Change, commit } from '../store/change.js';
import type { Database } from '../store/database.js';
import type { Tx } from '../store/handles.js';
import { findAnswer, keepAnswer } from '../store/idempotency-repository.js';
import type { Caller } from './auth.js';
import { addressBlock } from './client-address.js';
import { type Answer, send } from './reply.js';

/**
 * `Idempotency-Key` on POST (draft-ietf-httpapi-idempotency-key-header, as Stripe has it): a
 * POST sent again with the key of one that succeeded is answered as the first was, without
 * doing it twice. The answer is kept in the transaction of the change it answers, so a crash
 * can never keep one without the other (docs/decisions/0041-idempotency.md). At rest the key,
 * fingerprint and credential are HMACs under the server's key, and an answer whose route's
 * schema is marked CARRIES_SECRET is sealed (0004-secrets-at-rest.md). A kept answer goes back
 * only to the credential that sent its request (0069-replays-to-their-credential.md).
 */
export const IDEMPOTENCY_HEADER = 'idempotency-key';
export const REPLAYED_HEADER = 'idempotent-replayed';
export const KEPT_MS = 24 * 60 * 60 * 1000;
/** At most 255 printable ASCII characters (spaces inside allowed). */
const VALID_KEY = /^[\x20-\x7e]{1,255}$/;
const INVALID_KEY =
  'The Idempotency-Key header must be 1 to 255 printable ASCII characters, sent once; send a ' +
  'new UUID, for instance.';
const RUNNING = 'A request with this Idempotency-Key is still running; retry in a moment.';
/** Taken and then expired in the instant between: the key is free again. */
const RELEASED = 'This Idempotency-Key was being released; retry.';
const OTHER_CREDENTIAL =
  'This Idempotency-Key was used by another credential of the account (another API key, the ' +
  'password, or another portal session), and its answer is given again only to that ' +
  'credential. Send a new Idempotency-Key with each new request.';
/** The same, said on a portal page: the form's key was sent from another browser. */
const OTHER_SESSION =
  'This form was sent from another signed-in browser, and what it did is shown there alone. ' +
  'Reload the page to send a new form.';
/** Kept before answers were tied to their credential (migration 0017), and holding a secret. */
const SENDER_UNKNOWN =
  'This Idempotency-Key answered with a secret before answers were tied to the credential ' +
  'that sent them, so its answer is given again to no one: read the resource to see what was ' +
  'done, and send a new Idempotency-Key with each new request.';
/** The credential of a request without one (sign-up, a portal form sent signed out). */
const ANONYMOUS = 'anonymous';

/** The hidden field of the portal's forms that carries their idempotency key. */
export const FORM_KEY_FIELD = 'idempotency_key';

/** What a write answered, and whether that is a kept answer given again. */
export interface Once {
  answer: Answer;
  replayed: boolean;
}

/** The key was taken by a request whose answer is kept: thrown to roll this one's write back. */
class KeyTaken extends Error {}

interface Claim {
  /** `scope` and `keyHash` together: the in-flight set's key. */
  id: string;
  scope: string;
  /** The key's HMAC under the server's current key: what is written. */
  keyHash: string;
  fingerprint: string;
  /** The HMAC of the credential that sends the request: the only one the answer replays to. */
  credential: string;
  /** What another credential is told (OTHER_CREDENTIAL, or OTHER_SESSION for a form). */
  another: string;
  /** The answer's encryption key, under the server's current key (made when needed). */
  secret: () => Buffer;
  /** The same under each older server key still configured (a rotation): read, never written. */
  older: Array<{ keyHash: string; fingerprint: string; credential: string; secret: () => Buffer }>;
  /** The answer carries a secret (its route's schema says so): kept sealed, not as JSON. */
  sealed: boolean;
}

/** What the server's keys give this module: one key for the hashes, one for the credentials,
 * one for the seals. */
interface ServerKey {
  mac: Buffer;
  who: Buffer;
  seal: Buffer;
}

/** Answers POSTs once per idempotency key. One per app. */
export class IdempotentAnswers {
  /** This process's requests still running, by claim id: settled when they are done. */
  private readonly inFlight = new Map<string, Promise<unknown>>();
  /** Derived from the server's keys: the first one hashes and seals; every one is read. */
  private readonly keys: ServerKey[];

  constructor(
    private readonly database: Pick<Database, 'reader' | 'write'>,
    private readonly clock: Clock,
    /** The server's keys (WEBHOOK_SECRET_KEY's, or derived from SESSION_SECRET), newest first. */
    serverKeys: readonly string[],
  ) {
    if (serverKeys.length === 0) throw new Error('IdempotentAnswers needs a server key');
    this.keys = serverKeys.map((key) => ({
      mac: derive('animal-store idempotency mac', key),
      who: derive('animal-store idempotency credential', key),
      seal: derive('animal-store idempotency seal', key),
    }));
  }

  /**
   * Runs a POST's change and sends the answer of its outcome (`toAnswer`). With an
   * `Idempotency-Key`, the answer is kept in the change's own write, so both commit or
   * neither; the same key again is answered with the kept answer and `Idempotent-Replayed:
   * true`, or refused when it came with another request (422), from another credential (409)
   * or while the first still runs (409 with Retry-After). Only successes are kept: a refusal
   * (4xx) or a failure (5xx) changed nothing, so the request may be sent again. Resolves to the
   * reply, sent: a handler returns it, so Fastify knows the answer is out (an async handler that
   * sent without returning the reply races it).
   */
  async commit<T>(
    request: FastifyRequest,
    reply: FastifyReply,
    change: Change<T> | Promise<Change<T>>,
    toAnswer: (outcome: T) => Answer,
  ): Promise<FastifyReply> {
    const key = idempotencyKeyOf(request);
    // Sign-up has no account yet: its keys are the client address block's.
    const scope = request.caller?.account.id ?? `ip:${addressBlock(request.ip)}`;
    const sealed = request.routeOptions.config.carriesSecret === true;
    const claim =
      key === undefined
        ? undefined
        : this.claimOf(scope, key, credentialOf(request.caller), request, request.body, sealed);
    const { answer, replayed } = await this.once(claim, change, toAnswer);
    if (replayed) reply.header(REPLAYED_HEADER, 'true');
    return send(reply, answer);
  }

  /**
   * A portal form's write, once per form: the form carries its key in the hidden field
   * `idempotency_key` (FORM_KEY_FIELD), so a form sent twice (a double click, a resent page)
   * acts once and shows the first answer again. The other fields but the CSRF token are the
   * request's fingerprint. A form without a valid key just runs. `session` names the browser's
   * portal session (PortalSessions.csrfBinding): the first answer is shown again to that
   * session only; a form sent signed out (sign-up) has none.
   */
  form<T>(
    request: FastifyRequest,
    scope: string,
    change: Change<T> | Promise<Change<T>>,
    toAnswer: (outcome: T) => Answer,
    session?: string,
  ): Promise<Once> {
    const {
      [FORM_KEY_FIELD]: key,
      _csrf,
      ...fields
    } = (request.body ?? {}) as Record<string, unknown>;
    const valid = typeof key === 'string' && VALID_KEY.test(key);
    const credential = session === undefined ? ANONYMOUS : `session ${session}`;
    const claim = valid
      ? {
          ...this.claimOf(`portal:${scope}`, key, credential, request, fields, false),
          another: OTHER_SESSION,
        }
      : undefined;
    // A browser shows the answer to the last of its sends: that one waits for the first.
    return this.once(claim, change, toAnswer, 'wait');
  }

  private async once<T>(
    claim: Claim | undefined,
    planned: Change<T> | Promise<Change<T>>,
    toAnswer: (outcome: T) => Answer,
    whileRunning: 'refuse' | 'wait' = 'refuse',
  ): Promise<Once> {
    if (!claim)
      return { answer: toAnswer(await commit(this.database, await planned)), replayed: false };
    while (this.inFlight.has(claim.id)) {
      if (whileRunning === 'refuse') {
        throw new ApiError('idempotency_key_in_use', RUNNING, undefined, RETRY_SOON);
      }
      await this.inFlight.get(claim.id)?.catch(() => {});
    }
    let settle = () => {};
    this.inFlight.set(
      claim.id,
      new Promise<void>((resolve) => {
        settle = resolve;
      }),
    );
    try {
      let answer: Answer | undefined;
      try {
        answer = await this.commitKept(claim, await planned, toAnswer);
      } catch (error) {
        if (!(error instanceof KeyTaken)) throw error;
      }
      // The key was taken (a retry, or the same request on another instance): this write was
      // rolled back, or refused because the first one's change is there (a second sign-up's
      // email_taken). A retry costs a write rolled back; the first request, no extra read.
      const kept =
        answer === undefined || answer.status >= 400 ? await this.keptAnswer(claim) : undefined;
      if (kept) return { answer: kept, replayed: true };
      if (answer) return { answer, replayed: false };
      throw new ApiError('idempotency_key_in_use', RELEASED, undefined, RETRY_SOON);
    } finally {
      this.inFlight.delete(claim.id);
      settle();
    }
  }

  /**
   * Runs the change (`commit`, the one runner) with the claim's kept answer in its write: the
   * answer is made of the outcome once the change's work returns, and a success's is inserted
   * as bytes in the same transaction. A refusal changed nothing (on PostgreSQL its failed
   * statement may even have ended the transaction): not kept, so the request may be sent again
   * as it is. Throws KeyTaken, the write rolled back, when the key is kept already. The kept
   * answer's insert decides nothing: a blind write stays blind with it.
   */
  private async commitKept<T>(
    claim: Claim,
    change: Change<T>,
    toAnswer: (outcome: T) => Answer,
  ): Promise<Answer> {
    let answer: Answer | undefined;
    const outcome = await commit(this.database, change, async (tx, done) => {
      answer = toAnswer(done);
      if (answer.status < 400) await this.keep(tx, claim, this.bytesOf(claim, answer));
    });
    return answer ?? toAnswer(outcome);
  }

  /** An answer as kept: its JSON, sealed under the claim's secret (AES-256-GCM) when it carries
   * a secret, as base64url (which never begins with the `{` of an answer kept as JSON). */
  private bytesOf(claim: Claim, answer: Answer): string {
    const json = JSON.stringify(answer);
    return claim.sealed ? sealWith(claim.secret(), json) : json;
  }

  private async keep(tx: Tx, claim: Claim, kept: string): Promise<void> {
    const now = this.clock.now();
    // While the server's key is being rotated, a key kept under the older one is taken too.
    for (const older of claim.older) {
      if (await findAnswer(tx, claim.scope, older.keyHash, now.toISOString())) throw new KeyTaken();
    }
    const stored = await keepAnswer(tx, {
      scope: claim.scope,
      key_hash: claim.keyHash,
      fingerprint: claim.fingerprint,
      answer: kept,
      credential_hash: claim.credential,
      created_at: now.toISOString(),
      expires_at: new Date(now.getTime() + KEPT_MS).toISOString(),
    });
    if (!stored) throw new KeyTaken();
  }

  /**
   * The answer kept for the claim's key, if any; a 409 when another credential sent it, a 422
   * when it came with another request. The credential is checked first: another credential
   * learns nothing of the first request, not even whether its own body matches.
   */
  private async keptAnswer(claim: Claim): Promise<Answer | undefined> {
    const now = this.clock.now().toISOString();
    for (const under of [claim, ...claim.older]) {
      const kept = await findAnswer(this.database.reader, claim.scope, under.keyHash, now);
      if (!kept) continue;
      const sealed = !kept.answer.startsWith('{');
      // Kept before migration 0017, by an unknown sender: an answer without a secret holds
      // nothing the account's tables do not, and is replayed as it was; one with a secret is
      // replayed to no one (it expires within 24 hours of the upgrade).
      if (kept.credential_hash === null && sealed) {
        throw new ApiError('idempotency_key_in_use', SENDER_UNKNOWN);
      }
      if (kept.credential_hash !== null && kept.credential_hash !== under.credential) {
        throw new ApiError('idempotency_key_in_use', claim.another);
      }
      if (kept.fingerprint !== under.fingerprint) {
        throw new ApiError(
          'idempotency_key_mismatch',
          'This Idempotency-Key was used with another request (method, path or body); ' +
            'send a new key for a new request.',
        );
      }
      return JSON.parse(sealed ? openWith(under.secret(), kept.answer) : kept.answer) as Answer;
    }
    return undefined;
  }

  /** The claim of `key` in `scope` by `credential` on a request, whose fingerprint is its
   * method, URL and `fields` (the body, or a form's fields but its key and CSRF token). */
  private claimOf(
    scope: string,
    key: string,
    credential: string,
    { method, url }: FastifyRequest,
    fields: unknown,
    sealed: boolean,
  ): Claim {
    const request = `${method} ${url}\n${JSON.stringify(fields ?? null)}`;
    const [current, ...older] = this.keys.map(({ mac, who, seal }) => ({
      // Scope and key apart by a NUL, which neither holds.
      keyHash: createHmac('sha256', mac).update(scope).update('\0').update(key).digest('base64url'),
      fingerprint: createHmac('sha256', mac).update(request).digest('base64url'),
      // With the scope and the key, so equal credentials cannot be told apart across rows.
      credential: createHmac('sha256', who)
        .update(`${scope}\0${key}\0${credential}`)
        .digest('base64url'),
      secret: () => createHmac('sha256', seal).update(scope).update('\0').update(key).digest(),
    }));
    const first = current as (typeof older)[number];
    return {
      id: `${scope} ${first.keyHash}`,
      scope,
      ...first,
      older,
      sealed,
      another: OTHER_CREDENTIAL,
    };
  }
}

/**
 * Who sends an API request, as a replay tells them apart: the API key by its id; HTTP Basic
 * (only /v1/keys takes it) as the account's password, one credential whichever it is at the
 * time; no one for sign-up. A key id is no secret, and it is kept only inside an HMAC.
 */
function credentialOf(caller: Caller | null): string {
  if (caller === null) return ANONYMOUS;
  return caller.keyId === null ? 'password' : `key ${caller.keyId}`;
}

/**
 * The request's Idempotency-Key, or undefined when it sent none. Sent twice, Node joins the
 * values with a comma (`a, b`): that is no key a client chose, and it is refused with the rest.
 */
function idempotencyKeyOf(request: FastifyRequest): string | undefined {
  if (request.headers[IDEMPOTENCY_HEADER] === undefined) return undefined;
  const raw = request.raw.rawHeaders;
  let found: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    if ((raw[i] as string).length !== IDEMPOTENCY_HEADER.length) continue;
    if ((raw[i] as string).toLowerCase() !== IDEMPOTENCY_HEADER) continue;
    if (found !== undefined) throw new ApiError('invalid_idempotency_key', INVALID_KEY);
    found = raw[i + 1] as string;
  }
  if (found !== undefined && !VALID_KEY.test(found)) {
    throw new ApiError('invalid_idempotency_key', INVALID_KEY);
  }
  return found;
}

/** A 256-bit key for one purpose, from a server key (its own label: keys never cross uses). */
function derive(label: string, serverKey: string): Buffer {
  return createHash('sha256').update(`${label}\n${serverKey}`).digest();
}
