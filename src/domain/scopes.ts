/**
 * What a restricted API key may do (docs/decisions/0014-key-scopes.md). A scope is
 * `<resource>:<read|write>`; `write` implies `read` of the same resource. A key made without
 * scopes has full access: every scope, those added later included.
 */
export const SCOPE_RESOURCES = [
  'pets',
  'categories',
  'orders',
  'messages',
  'events',
  'webhooks',
  'account',
  'requests',
] as const;

export type ScopeResource = (typeof SCOPE_RESOURCES)[number];
export type Scope = `${ScopeResource}:${'read' | 'write'}`;

/** Every scope, in the order the docs and the portal list them. */
export const SCOPES: readonly Scope[] = SCOPE_RESOURCES.flatMap((resource) => [
  `${resource}:read` as const,
  `${resource}:write` as const,
]);

/** The scopes of a read-only key: every resource's `read`. */
export const READ_ONLY_SCOPES: readonly Scope[] = SCOPE_RESOURCES.map(
  (resource) => `${resource}:read` as const,
);

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

/** A key's scopes as given: each once, in SCOPES' order (`[]` stays empty: no access). */
export function normalizeScopes(scopes: readonly Scope[]): Scope[] {
  const given = new Set<Scope>(scopes);
  return SCOPES.filter((scope) => given.has(scope));
}
