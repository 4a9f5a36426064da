/**
 * Where the service lives. The catalogue API's base includes `/v1`; the quickstart messages
 * endpoint has a base address of its own, without a version prefix (seed, "Environments").
 */
export interface Environment {
  /** Base of the catalogue API, with `/v1`. */
  readonly api: string;
  /** Base of the quickstart messages endpoint (no version prefix). */
  readonly messages: string;
}

export const ENVIRONMENTS = {
  production: {
    api: 'https://api.animal-store.example/v1',
    messages: 'https://messages.animal-store.example',
  },
  staging: {
    api: 'https://api.staging.animal-store.example/v1',
    messages: 'https://messages.staging.animal-store.example',
  },
} as const satisfies Record<string, Environment>;

export type EnvironmentName = keyof typeof ENVIRONMENTS;

/**
 * A named environment, or the base URL of any deployment (`http://127.0.0.1:8080/v1`; the `/v1`
 * may be left out). Messages default to the same address without `/v1`, as a single
 * `npm start` serves them; `messagesUrl` names another.
 */
export function resolveEnvironment(
  environment: EnvironmentName | (string & {}),
  messagesUrl: string | undefined,
): Environment {
  if (Object.hasOwn(ENVIRONMENTS, environment)) {
    const named = ENVIRONMENTS[environment as EnvironmentName];
    return { api: named.api, messages: trimSlash(messagesUrl ?? named.messages) };
  }
  const url = new URL(environment);
  const path = trimSlash(url.pathname);
  const root = path.endsWith('/v1') ? path.slice(0, -3) : path;
  return {
    api: `${url.origin}${root}/v1`,
    messages: trimSlash(messagesUrl ?? `${url.origin}${root}`),
  };
}

function trimSlash(url: string): string {
  return url.replace(/\/+$/, '');
}
