/**
 * Where the service lives. The catalogue API's base includes `/v1`; the quickstart messages
 * endpoint has a base address of its own, without a version prefix (seed, "Environments").
 * There are no named environments: an address is given, or the client talks to the local
 * service (docs/decisions/0007-sdk-package.md).
 */

/** The address used when none is given: the service as `npm start` runs it on this machine. */
export const DEFAULT_BASE_URL = 'http://127.0.0.1:8080';

export interface Endpoints {
  /** Base of the catalogue API, with `/v1`. */
  readonly api: string;
  /** Base of the quickstart messages endpoint (no version prefix). */
  readonly messages: string;
}

/**
 * The bases of a deployment's address (`http://127.0.0.1:8080/v1`; the `/v1` may be left out).
 * Messages default to the same address without `/v1`, as a single `npm start` serves them;
 * `messagesUrl` names another. `option` names the setting in the error an address that is not
 * http(s) throws.
 */
export function resolveBaseUrl(
  baseUrl: string,
  messagesUrl?: string,
  option = 'baseUrl',
): Endpoints {
  const url = httpUrl(baseUrl, option);
  const path = trimSlash(url.pathname);
  const root = path.endsWith('/v1') ? path.slice(0, -3) : path;
  return {
    api: `${url.origin}${root}/v1`,
    messages:
      messagesUrl === undefined
        ? `${url.origin}${root}`
        : trimSlash(httpUrl(messagesUrl, 'messagesUrl').href),
  };
}

function httpUrl(value: string, option: string): URL {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    // Not a URL at all: the same error as a URL of another scheme.
  }
  if (url?.protocol !== 'http:' && url?.protocol !== 'https:') {
    throw new TypeError(
      `${option} must be the service's http(s) address, such as '${DEFAULT_BASE_URL}' or ` +
        `'https://api.example.com'; got ${JSON.stringify(value)}.`,
    );
  }
  return url;
}

function trimSlash(url: string): string {
  return url.replace(/\/+$/, '');
}
