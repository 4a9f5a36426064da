/**
 * What a restricted API key may do (docs/decisions/0014-key-scopes.md). A scope is
 * `<resource>:<read|write>`; `write` implies `read` of the same resource. A key made without
 * scopes has full access: every scope, those added later included.
 */
/** What each resource's operations can do: events, the request log and the account are only
 * read through a key, so there is no `events:write` to grant; the sandbox is only reset. */
const ACCESS = {
  pets: ['read', 'write'],
  categories: ['read', 'write'],
  orders: ['read', 'write'],
  messages: ['read', 'write'],
  events: ['read'],
  webhooks: ['read', 'write'],
  account: ['read'],
  requests: ['read'],
  sandbox: ['write'],
} as const;

export type ScopeResource = keyof typeof ACCESS;
export type Scope = {
  [R in ScopeResource]: `${R}:${(typeof ACCESS)[R][number]}`;
}[ScopeResource];

export const SCOPE_RESOURCES = Object.keys(ACCESS) as ScopeResource[];

/** Every scope, in the order the docs and the portal list them. */
export const SCOPES: readonly Scope[] = SCOPE_RESOURCES.flatMap((resource) =>
  ACCESS[resource].map((access) => `${resource}:${access}` as Scope),
);

/** The scopes of a read-only key: every resource's `read`. */
export const READ_ONLY_SCOPES: readonly Scope[] = SCOPES.filter((scope) => scope.endsWith(':read'));

export function isScope(value: unknown): value is Scope {
  return SCOPES.includes(value as Scope);
}

/** What a key holds: its scopes, or `null` for full access. */
export type Grant = readonly Scope[] | null;

/** Whether a key holding `grant` may call an operation that needs `needed`. */
export function allows(grant: Grant, needed: Scope): boolean {
  if (grant === null) return true;
  if (grant.includes(needed)) return true;
  return needed.endsWith(':read') && grant.includes(`${needed.slice(0, -5)}:write` as Scope);
}

/**
 * A key's scopes as stored. Keys made before 2026-11-29 could hold a `write` of a resource that
 * is only read (`events:write`); it granted that `read`, and still does.
 */
export function storedScopes(stored: readonly unknown[]): Scope[] {
  return normalizeScopes(
    stored
      .map((scope) =>
        typeof scope === 'string' && !isScope(scope) ? scope.replace(/:write$/, ':read') : scope,
      )
      .filter(isScope),
  );
}

/** A key's scopes as given: each once, in SCOPES' order (`[]` stays empty: no access). */
export function normalizeScopes(scopes: readonly Scope[]): Scope[] {
  const given = new Set<Scope>(scopes);
  return SCOPES.filter((scope) => given.has(scope));
}
