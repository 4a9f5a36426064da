import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  addApiKey,
  type KeySpec,
  keyPrefixFor,
  keySpec,
  listApiKeys,
  revokeKey,
  secretKey,
} from '../../domain/api-keys.js';
import {
  isScope,
  normalizeScopes,
  READ_ONLY_SCOPES,
  SCOPES,
  type Scope,
} from '../../domain/scopes.js';
import { ApiError, excerpt } from '../../errors.js';
import { v1Url } from '../../http/links.js';
import { NewApiKey } from '../../http/schemas/accounts.js';
import { checkBody } from '../../http/validation.js';
import { formText, requireAccount, signedInAccount } from '../forms.js';
import { pageContext, seeOther, sendHtml } from '../render.js';
import { type KeyAccess, type KeysView, keyKind, keysPage, revokePage } from '../views/keys.js';
import { limitState } from './limit-state.js';

/** What a form sent again (a reload, a resend) shows instead of the secret. */
function alreadyMade(prefix: string): string {
  return (
    `This form made the key ${prefix}… already. Its secret was shown once, when it was made, ` +
    'and is not kept: if you did not copy it, revoke the key and create another.'
  );
}

interface KeyParams {
  keyId: string;
}

/** Create, list and revoke the account's API keys. */
export async function keyPages(app: FastifyInstance): Promise<void> {
  const { database, clock, config, idempotency, limiter, outages } = app.ctx;
  const kind = keyKind(keyPrefixFor(config.env));
  const { reader } = database;
  const signedIn = { preHandler: requireAccount };
  const form = { preValidation: app.csrfProtection, preHandler: requireAccount };

  const show = async (
    request: FastifyRequest,
    reply: FastifyReply,
    view: Omit<KeysView, 'keys' | 'apiBase' | 'kind' | 'limits'>,
    status = 200,
  ) => {
    const account = signedInAccount(request);
    const keys = await listApiKeys(reader, account.id);
    const limits = await limitState(limiter, outages, account, keys);
    const apiBase = v1Url(config, request, '').href;
    return sendHtml(
      reply,
      keysPage(pageContext(request, reply), {
        ...view,
        keys,
        apiBase,
        kind,
        limits,
      }),
      status,
    );
  };

  const findKey = async (request: FastifyRequest<{ Params: KeyParams }>) => {
    const keys = await listApiKeys(reader, signedInAccount(request).id);
    const key = keys.find((k) => k.id === request.params.keyId);
    if (!key) throw new ApiError('not_found', 'No live API key with this id in your account.');
    return key;
  };

  app.get('/keys', signedIn, (request, reply) => {
    const query = request.query as Record<string, unknown>;
    const notice =
      query.welcome !== undefined
        ? { kind: 'success' as const, text: 'Your account is ready. Create your first API key.' }
        : query.revoked !== undefined
          ? { kind: 'success' as const, text: 'The key is revoked.' }
          : undefined;
    return show(request, reply, { notice });
  });

  app.post('/keys', form, async (request, reply) => {
    const name = formText(request.body, 'name').trim();
    const asked = accessAsked(request.body);
    const problem = name === '' ? undefined : checkBody(NewApiKey.properties.name, name)[0];
    const origins = formText(request.body, 'origins').trim();
    const sent = { name, access: asked.access, scopes: asked.scopes, origins };
    if (problem || !asked.ok) {
      const nameError = problem && `The name ${problem.message}.`;
      const accessError = asked.ok ? undefined : asked.error;
      return show(request, reply, { ...sent, nameError, accessError }, 400);
    }
    const { access } = asked;
    let spec: KeySpec;
    if (access === 'publishable') {
      const written = origins === '' ? [] : origins.split(/\s+/);
      const made = keySpec({ name: name || null, type: 'publishable', allowedOrigins: written });
      if (!made.ok) return show(request, reply, { ...sent, originsError: made.message }, 400);
      spec = made.value;
    } else {
      const scopes = access === 'full' ? null : access === 'read' ? READ_ONLY_SCOPES : asked.scopes;
      if (scopes?.length === 0) {
        const scopesError = 'Tick at least one scope, or choose full access or read only.';
        return show(request, reply, { ...sent, scopesError }, 400);
      }
      spec = secretKey(name || null, scopes);
    }
    const accountId = signedInAccount(request).id;
    // The secret is shown by this answer alone: what is kept for the form's key (a resent
    // form, a reload) says only that the key was made.
    let secret: string | undefined;
    const { answer, replayed } = await idempotency.form(
      request,
      accountId,
      addApiKey(clock, config.env, accountId, spec),
      (made) => {
        if (!made.ok) return { status: 409, body: { message: made.message } };
        secret = made.value.secret;
        return { status: 201, body: { prefix: made.value.key.prefix } };
      },
      // Shown again to this browser's session alone.
      app.portal.sessions.csrfBinding(request),
    );
    if (answer.status !== 201) {
      const { message } = answer.body as { message: string };
      return show(request, reply, { ...sent, nameError: message }, 409);
    }
    if (replayed || secret === undefined) {
      const { prefix } = answer.body as { prefix: string };
      return show(request, reply, { notice: { kind: 'success', text: alreadyMade(prefix) } });
    }
    const made = spec.type === 'publishable' ? spec.origins : undefined;
    return show(request, reply, { created: { name: name || null, secret, origins: made } }, 201);
  });

  app.get<{ Params: KeyParams }>('/keys/:keyId/revoke', signedIn, async (request, reply) =>
    sendHtml(reply, revokePage(pageContext(request, reply), await findKey(request))),
  );

  app.post<{ Params: KeyParams }>('/keys/:keyId/revoke', form, async (request, reply) => {
    const revoked = await revokeKey(
      database,
      clock,
      signedInAccount(request).id,
      request.params.keyId,
      app.ctx.keysChanged,
    );
    if (!revoked.ok)
      throw new ApiError('not_found', 'No live API key with this id in your account.');
    return seeOther(reply, '/portal/keys?revoked=1');
  });
}

/** What the key form asks for, or why it is refused: its access-granting fields take only the
 * exact values the form sends (docs/decisions/0068-fail-closed-and-private-files.md). */
type AccessAsked =
  | { ok: true; access: KeyAccess; scopes: Scope[] }
  | {
      ok: false;
      /** The access sent when it is one of ACCESS, else null: the form shows none chosen. */
      access: KeyAccess | null;
      /** The ticked values that are scopes: the form shows them ticked again. */
      scopes: Scope[];
      error: string;
    };

const ACCESS: readonly KeyAccess[] = ['full', 'read', 'custom', 'publishable'];

function isAccess(value: unknown): value is KeyAccess {
  return ACCESS.includes(value as KeyAccess);
}

/** A value a person sent, quoted for an error message (escaped by the page). */
function quoted(value: unknown): string {
  return JSON.stringify(excerpt(typeof value === 'string' ? value : String(value), 40));
}

/**
 * The form's `access` (one radio: full, read or custom) and `scope` (the boxes ticked, each
 * `<resource>:<read|write>`). Each value must be exactly one the form offers: `CUSTOM`,
 * `custom `, an empty value, `none`, a field sent twice, or an unknown scope (`events:write`:
 * no operation writes events) is refused with the values accepted, never read as some
 * default. Only an `access` left out is the form's default (full access, the radio checked when
 * the page is drawn), as a key the API makes without `scopes`. Scopes are checked whatever the
 * access, though only `custom` uses them.
 */
function accessAsked(body: unknown): AccessAsked {
  const fields = (body ?? {}) as Record<string, unknown>;
  const errors: string[] = [];
  let access: KeyAccess | null = 'full';
  if (fields.access !== undefined) {
    access = isAccess(fields.access) ? fields.access : null;
    if (access === null) {
      const got = Array.isArray(fields.access) ? 'it more than once' : quoted(fields.access);
      errors.push(`Choose the access: full, read, custom or publishable (the form sent ${got}).`);
    }
  }
  const ticked = fields.scope === undefined ? [] : [fields.scope].flat();
  const unknown = ticked.filter((scope) => !isScope(scope));
  if (unknown.length > 0) {
    errors.push(
      `Unknown scope ${unknown.slice(0, 3).map(quoted).join(', ')}${unknown.length > 3 ? '…' : ''}: ` +
        `each scope is one of ${SCOPES.join(', ')}.`,
    );
  }
  const scopes = normalizeScopes(ticked.filter(isScope));
  if (access === null || errors.length > 0) {
    return { ok: false, access, scopes, error: errors.join(' ') };
  }
  return { ok: true, access, scopes };
}
