import { randomBytes } from 'node:crypto';

/**
 * The one place that reads the environment. Every value is checked here, at start; a bad
 * value stops the process with a message naming the variable.
 */
const APP_ENVS = ['development', 'staging', 'production'] as const;
export type AppEnv = (typeof APP_ENVS)[number];
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface Config {
  env: AppEnv;
  host: string;
  port: number;
  /** `sqlite:<path>`, `sqlite::memory:` or `postgres://…`. */
  databaseUrl: string;
  logLevel: LogLevel;
  /** Production address of the catalogue API, with its `/v1` prefix. */
  publicBaseUrl: string | undefined;
  /** Staging address of the catalogue API, with its `/v1` prefix. */
  stagingBaseUrl: string | undefined;
  /** Address of the quickstart messages endpoint (no version prefix). */
  messagesBaseUrl: string | undefined;
  /** This deployment's own catalogue address (production's or staging's), for the links it
   * builds; unset in development, where links follow the request's host. */
  ownBaseUrl: string | undefined;
  /** Which `X-Forwarded-*` hops to believe: none (false), all (true), the last N proxies, or
   * the proxies at these addresses/CIDR ranges (Fastify's `trustProxy`). */
  trustProxy: boolean | number | string[];
  /** Create a demo account and print a key on the first start on an empty store. */
  demoAccount: boolean;
  /** log2 of scrypt's N for passwords hashed from now on; hashes carry their own, so any
   * earlier cost still verifies (src/domain/passwords.ts). */
  passwordHashCost: number;
  /** Largest request body accepted, in bytes. */
  bodyLimit: number;
  /** How long the server waits for things from a client before it gives up (408). */
  timeouts: {
    /** From the connection (or the previous request) to the end of a request's headers. */
    headersMs: number;
    /** From the connection to the whole request, body included. */
    requestMs: number;
    /** How long an idle keep-alive connection is kept open. */
    keepAliveMs: number;
  };
  /** PostgreSQL pool size. */
  databasePoolSize: number;
  /** PostgreSQL: longest a statement may run before the server cancels it. */
  databaseStatementTimeoutMs: number;
  /** Bring the schema up to date at start (off: `animal-store migrate` in the deploy does). */
  migrateOnStart: boolean;
  /** Longest a SIGTERM/SIGINT shutdown may take before the process exits anyway. */
  shutdownTimeoutMs: number;
  /** Where `/metrics` is served: nowhere, on the API port (optionally behind a bearer token),
   * or on a port of its own. */
  metrics:
    | { mode: 'off' }
    | { mode: 'public' }
    | { mode: 'token'; token: string }
    | { mode: 'port'; port: number; host: string };
  /** `redis://…`: share rate-limit counters (and later the queue) between instances. */
  redisUrl: string | undefined;
  /** Prefix of every Redis key this deployment writes. */
  redisKeyPrefix: string;
  /** PostgreSQL with Redis: instances share the data and the counters, and what one keeps (a
   * verified key, a page) is checked against versions kept in Redis beside the counters. */
  shared: boolean;
  /** Keys that sign the developer portal's cookies: the first signs, every one verifies (so a
   * key can be rotated without signing everyone out). Random per process in development. */
  sessionSecrets: string[];
  /** Run the message worker in this process. */
  worker: boolean;
  messages: {
    /** Messages a worker delivers at once. */
    concurrency: number;
    /** Delivery attempts before a message is `failed`. */
    maxAttempts: number;
    /** Back-off before the second attempt, doubled before each next one. */
    retryBaseMs: number;
    /** How long a worker holds a message before another may take it over. */
    leaseMs: number;
  };
  webhooks: {
    /** Keys that encrypt endpoints' signing secrets at rest: the first encrypts, every one
     * decrypts (so the key can be rotated). A fixed, public key in development. */
    secretKeys: string[];
    /** Development: `http://` URLs and loopback addresses (127.0.0.0/8, ::1, and
     * ::ffff:127.0.0.0/104) are allowed (src/webhooks/address.ts). */
    allowLoopback: boolean;
    /** Longest a delivery may take, connection to answer. */
    timeoutMs: number;
    /** Back-off before the second attempt, doubled before each next one (with jitter)… */
    retryBaseMs: number;
    /** …up to this… */
    retryMaxMs: number;
    /** …for this long after the event: then the delivery fails, and an endpoint failing this
     * long is disabled. */
    retryForMs: number;
    /** How long a dispatcher holds the deliveries it claimed before others may take them. */
    leaseMs: number;
    /** Deliveries a dispatcher sends at once (its slots): an account takes at most a quarter of
     * them, an endpoint 2, the endpoints that do not answer half (src/webhooks/dispatcher.ts). */
    concurrency: number;
    /** How often an idle dispatcher looks for due deliveries. */
    pollMs: number;
  };
  requestLog: {
    /** `REQUEST_LOG=off`: no request is logged, and the log's routes answer 404. */
    enabled: boolean;
    /** Entries held in memory, waiting for their batch, at most: past it they are dropped. */
    buffer: number;
  };
  /** OpenTelemetry traces, sent by OTLP/HTTP (JSON) to `url`; undefined when off
   * (src/ops/tracing.ts). */
  tracing:
    | {
        url: string;
        serviceName: string;
        /** `OTEL_TRACES_SAMPLER`: the SDK's names, `parentbased_always_on` by default. */
        sampler: (typeof SAMPLERS)[number];
        /** `OTEL_TRACES_SAMPLER_ARG`: the share of traces kept by the ratio samplers. */
        ratio: number;
      }
    | undefined;
  rateLimit: {
    /** Requests refused while limited, in one window, before a key is banned. */
    banThreshold: number;
    banSeconds: number;
    /** When the counter store (Redis) fails: refuse with 503 (`closed`) or let requests through. */
    onStoreError: 'closed' | 'open';
  };
}

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`Invalid configuration: ${variable} ${message}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

function read(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const value = read(env, name);
  if (value === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(value)) {
    throw new ConfigError(name, `must be one of ${allowed.join(', ')} (got "${value}")`);
  }
  return value as T;
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const value = read(env, name);
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!/^\d+$/.test(value) || parsed < min || parsed > max) {
    throw new ConfigError(name, `must be an integer from ${min} to ${max} (got "${value}")`);
  }
  return parsed;
}

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const value = read(env, name)?.toLowerCase();
  if (value === undefined) return fallback;
  if (['1', 'true', 'yes', 'on'].includes(value)) return true;
  if (['0', 'false', 'no', 'off'].includes(value)) return false;
  throw new ConfigError(name, `must be true or false (got "${value}")`);
}

function url(env: Env, name: string): string | undefined {
  const value = read(env, name);
  if (value === undefined) return undefined;
  const protocol = URL.parse(value)?.protocol;
  if (protocol !== 'http:' && protocol !== 'https:') {
    throw new ConfigError(name, `must be an absolute http(s) URL (got "${value}")`);
  }
  return value.replace(/\/+$/, '');
}

function redisUrl(env: Env): string | undefined {
  const value = read(env, 'REDIS_URL');
  if (value === undefined || /^rediss?:\/\/.+/.test(value)) return value;
  throw new ConfigError('REDIS_URL', `must be redis://… or rediss://… (got "${redactUrl(value)}")`);
}

/** DATABASE_URL alone: what the store's own commands (migrate, backup, restore) need. */
export function databaseUrl(env: Env = process.env): string {
  const value = read(env, 'DATABASE_URL') ?? 'sqlite:./data/animal-store.db';
  if (/^sqlite:.+/.test(value) || /^postgres(ql)?:\/\/.+/.test(value)) return value;
  throw new ConfigError(
    'DATABASE_URL',
    `must be sqlite:<file path>, sqlite::memory: or postgres://… (got "${redactUrl(value)}")`,
  );
}

const PROXY_ADDRESS = /^(?:[0-9.]+|[0-9A-Fa-f:.]+)(?:\/[0-9]{1,3})?$/;

function trustProxy(env: Env): boolean | number | string[] {
  const value = read(env, 'TRUST_PROXY');
  if (value === undefined) return false;
  if (/^\d+$/.test(value)) return integer(env, 'TRUST_PROXY', 0, 0, 100);
  if (/^[a-z]+$/i.test(value)) return boolean(env, 'TRUST_PROXY', false);
  const addresses = value.split(',').map((address) => address.trim());
  if (addresses.every((address) => PROXY_ADDRESS.test(address) && /\d/.test(address))) {
    return addresses;
  }
  throw new ConfigError(
    'TRUST_PROXY',
    `must be true, false, a number of proxy hops, or proxy addresses/CIDR ranges separated by commas (got "${value}")`,
  );
}

function metrics(env: Env, appEnv: AppEnv, host: string): Config['metrics'] {
  // Open on the API port is handy on a laptop, and never the default where the API is public.
  const fallback = appEnv === 'development' ? 'public' : 'off';
  const mode = oneOf(env, 'METRICS', ['off', 'public', 'token', 'port'] as const, fallback);
  if (mode === 'token') {
    const token = read(env, 'METRICS_TOKEN');
    if (token === undefined || token.length < 16) {
      throw new ConfigError('METRICS_TOKEN', 'must be at least 16 characters when METRICS=token');
    }
    return { mode, token };
  }
  if (mode === 'port') {
    if (read(env, 'METRICS_PORT') === undefined) {
      throw new ConfigError('METRICS_PORT', 'must be set when METRICS=port');
    }
    return {
      mode,
      port: integer(env, 'METRICS_PORT', 0, 0, 65535),
      host: read(env, 'METRICS_HOST') ?? host,
    };
  }
  return { mode };
}

function timeouts(env: Env): Config['timeouts'] {
  const headersMs = integer(env, 'HEADERS_TIMEOUT_SECONDS', 10, 1, 3_600) * 1000;
  const requestMs = integer(env, 'REQUEST_TIMEOUT_SECONDS', 30, 1, 3_600) * 1000;
  // Node refuses a headers timeout longer than the whole request's.
  if (headersMs > requestMs) {
    throw new ConfigError(
      'HEADERS_TIMEOUT_SECONDS',
      `must not be longer than REQUEST_TIMEOUT_SECONDS (${requestMs / 1000})`,
    );
  }
  // Longer than the idle timeout of the balancers in front (60 s on most), so that they, not
  // we, close an idle connection: never one they are about to send a request on.
  const keepAliveMs = integer(env, 'KEEP_ALIVE_TIMEOUT_SECONDS', 72, 1, 3_600) * 1000;
  return { headersMs, requestMs, keepAliveMs };
}

const KEY_MIN_LENGTH = 32;

/**
 * A list of keys (`noun`: what the message calls them), comma-separated, each long enough and
 * none the development key; undefined when unset. SESSION_SECRET is such a list too: outside
 * development the seal keys derive from it when WEBHOOK_SECRET_KEY is unset.
 */
function keyList(env: Env, name: string, noun: string, appEnv: AppEnv): string[] | undefined {
  const keys = read(env, name)
    ?.split(',')
    .map((key) => key.trim());
  if (keys === undefined) return undefined;
  refuseDevelopmentKey(name, keys, appEnv);
  if (keys.some((key) => key.length < KEY_MIN_LENGTH)) {
    throw new ConfigError(
      name,
      `must be one or more comma-separated ${noun} of at least ${KEY_MIN_LENGTH} characters each`,
    );
  }
  return keys;
}

function sessionSecrets(env: Env, appEnv: AppEnv): string[] {
  const secrets = keyList(env, 'SESSION_SECRET', 'secrets', appEnv);
  if (secrets !== undefined) return secrets;
  if (appEnv !== 'development') {
    throw new ConfigError('SESSION_SECRET', `must be set when APP_ENV is ${appEnv}`);
  }
  // Development sessions last as long as the process; nothing to configure.
  return [randomBytes(32).toString('base64url')];
}
/** Development only: secrets of a laptop's endpoints need no protection, and stay readable
 * across restarts (a random key per process would make them unusable). */
const DEVELOPMENT_WEBHOOK_KEY = 'development-only webhook secret key, never for real use';

function webhookSecretKeys(env: Env, appEnv: AppEnv, sessionSecrets: string[]): string[] {
  const keys = keyList(env, 'WEBHOOK_SECRET_KEY', 'keys', appEnv);
  if (keys !== undefined) return keys;
  // Outside development SESSION_SECRET is required: its keys serve (kept in its list, an
  // old key still opens what it sealed). A key of its own is better, and can be rotated apart.
  if (appEnv !== 'development') return sessionSecrets.map((key) => `webhooks:${key}`);
  return [DEVELOPMENT_WEBHOOK_KEY];
}

/**
 * The development key is public (it is in this file): outside development, whoever reads the
 * database could open every webhook secret and kept answer sealed under it, and forge portal
 * cookies signed with it. Refused there anywhere in a list of keys, and so are its pieces: it
 * holds a comma, so pasted whole it reads as two keys
 * (docs/decisions/0068-fail-closed-and-private-files.md).
 */
function refuseDevelopmentKey(variable: string, keys: readonly string[], appEnv: AppEnv): void {
  const isDevelopmentKey = (key: string) =>
    key.length >= 16 && DEVELOPMENT_WEBHOOK_KEY.includes(key);
  if (appEnv === 'development' || !keys.some(isDevelopmentKey)) return;
  throw new ConfigError(
    variable,
    `must not hold the development key when APP_ENV is ${appEnv}: that key is public, so it ` +
      'protects nothing; use a random one (openssl rand -base64 48)',
  );
}

function webhooks(env: Env, appEnv: AppEnv, sessionSecrets: string[]): Config['webhooks'] {
  const retryBaseMs = integer(env, 'WEBHOOK_RETRY_BASE_MS', 30_000, 1, 86_400_000);
  const retryMaxMs = integer(env, 'WEBHOOK_RETRY_MAX_MS', 6 * 3_600_000, 1, 7 * 86_400_000);
  if (retryMaxMs < retryBaseMs) {
    throw new ConfigError(
      'WEBHOOK_RETRY_MAX_MS',
      `must not be below WEBHOOK_RETRY_BASE_MS (${retryBaseMs})`,
    );
  }
  return {
    secretKeys: webhookSecretKeys(env, appEnv, sessionSecrets),
    allowLoopback: appEnv === 'development',
    timeoutMs: integer(env, 'WEBHOOK_TIMEOUT_SECONDS', 10, 1, 60) * 1000,
    retryBaseMs,
    retryMaxMs,
    retryForMs: integer(env, 'WEBHOOK_RETRY_FOR_SECONDS', 3 * 86_400, 1, 30 * 86_400) * 1000,
    leaseMs: integer(env, 'WEBHOOK_LEASE_SECONDS', 60, 1, 3_600) * 1000,
    concurrency: integer(env, 'WEBHOOK_CONCURRENCY', 32, 1, 1000),
    pollMs: integer(env, 'WEBHOOK_POLL_MS', 1_000, 10, 60_000),
  };
}

const SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;

/**
 * Traces, from OpenTelemetry's own variables: on where an OTLP endpoint is set (the traces'
 * own, or the base one that `/v1/traces` is added to) and the SDK is not disabled.
 */
function tracing(env: Env): Config['tracing'] {
  const tracesUrl = url(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  const baseUrl = url(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  if (boolean(env, 'OTEL_SDK_DISABLED', false) || (!tracesUrl && !baseUrl)) return undefined;
  const ratio = Number(read(env, 'OTEL_TRACES_SAMPLER_ARG') ?? '1');
  if (!(ratio >= 0 && ratio <= 1)) {
    throw new ConfigError('OTEL_TRACES_SAMPLER_ARG', 'must be a number from 0 to 1');
  }
  return {
    url: tracesUrl ?? `${baseUrl}/v1/traces`,
    serviceName: read(env, 'OTEL_SERVICE_NAME') ?? 'animal-store',
    sampler: oneOf(env, 'OTEL_TRACES_SAMPLER', SAMPLERS, 'parentbased_always_on'),
    ratio,
  };
}

/** A store as the log names it: its kind, host, port and database, never its credentials. */
export function storeName(url: string): string {
  if (url.startsWith('sqlite:')) return `SQLite at ${url.slice('sqlite:'.length)}`;
  try {
    const parsed = new URL(url);
    const redis = parsed.protocol.startsWith('redis');
    const port = parsed.port || (redis ? '6379' : '5432');
    const database = redis ? '' : parsed.pathname;
    return `${redis ? 'Redis' : 'PostgreSQL'} at ${parsed.hostname}:${port}${database}`;
  } catch {
    return redactUrl(url);
  }
}

/** Hides the password of a connection string before it is shown anywhere. */
export function redactUrl(value: string): string {
  return value.replace(/\/\/([^:/@]*):[^@/]*@/, '//$1:***@');
}

export function loadConfig(env: Env = process.env): Config {
  const appEnv = oneOf(env, 'APP_ENV', APP_ENVS, 'development');
  const demoAccount = boolean(env, 'DEMO_ACCOUNT', appEnv === 'development');
  if (demoAccount && appEnv !== 'development') {
    throw new ConfigError('DEMO_ACCOUNT', `must be off when APP_ENV is ${appEnv}`);
  }
  const publicBaseUrl = url(env, 'PUBLIC_BASE_URL');
  const stagingBaseUrl = url(env, 'STAGING_BASE_URL');
  const messagesBaseUrl = url(env, 'MESSAGES_BASE_URL');
  const ownBaseUrl = appEnv === 'staging' ? stagingBaseUrl : publicBaseUrl;
  // Outside development, clients are told addresses, so they must be known, not guessed.
  if (appEnv !== 'development') {
    const own = appEnv === 'staging' ? 'STAGING_BASE_URL' : 'PUBLIC_BASE_URL';
    for (const [name, value] of [
      [own, ownBaseUrl],
      ['MESSAGES_BASE_URL', messagesBaseUrl],
    ] as const) {
      if (value === undefined) throw new ConfigError(name, `must be set when APP_ENV is ${appEnv}`);
    }
  }
  const host = read(env, 'HOST') ?? '127.0.0.1';
  const database = databaseUrl(env);
  const redis = redisUrl(env);
  const session = sessionSecrets(env, appEnv);
  return {
    env: appEnv,
    host,
    port: integer(env, 'PORT', 8080, 0, 65535),
    databaseUrl: database,
    logLevel: oneOf(env, 'LOG_LEVEL', LOG_LEVELS, 'info'),
    publicBaseUrl,
    stagingBaseUrl,
    messagesBaseUrl,
    ownBaseUrl,
    trustProxy: trustProxy(env),
    demoAccount,
    // OWASP's scrypt floor (N=2^17, r=8) needs 128 MiB a hash; 2^15 keeps a sign-in's hash to
    // 32 MiB and a fraction of a core while far from a fast hash. Below it only for the test
    // suites, which sign up and in hundreds of times (docs/configuration.md).
    passwordHashCost: integer(env, 'PASSWORD_HASH_COST', 15, 10, 17),
    bodyLimit: integer(env, 'BODY_LIMIT', 128 * 1024, 1024, 16 * 1024 * 1024),
    timeouts: timeouts(env),
    databasePoolSize: integer(env, 'DATABASE_POOL_SIZE', 10, 1, 1000),
    databaseStatementTimeoutMs: integer(
      env,
      'DATABASE_STATEMENT_TIMEOUT_MS',
      10_000,
      100,
      3_600_000,
    ),
    migrateOnStart: boolean(env, 'MIGRATE_ON_START', true),
    shutdownTimeoutMs: integer(env, 'SHUTDOWN_TIMEOUT_SECONDS', 25, 1, 3_600) * 1000,
    metrics: metrics(env, appEnv, host),
    redisUrl: redis,
    redisKeyPrefix: read(env, 'REDIS_KEY_PREFIX') ?? 'as:',
    shared: database.startsWith('postgres') && redis !== undefined,
    sessionSecrets: session,
    worker: oneOf(env, 'WORKER', ['on', 'off'] as const, 'on') === 'on',
    messages: {
      // On SQLite the table worker claims and settles a whole batch in two statements that ride
      // group commits, so a large claim is cheap and keeps it level with intake. On PostgreSQL
      // a failed delivery's settle or a BullMQ job takes one of the pool's connections.
      concurrency: integer(
        env,
        'WORKER_CONCURRENCY',
        database.startsWith('sqlite:') && !redis ? 128 : 32,
        1,
        1000,
      ),
      maxAttempts: integer(env, 'MESSAGE_MAX_ATTEMPTS', 5, 1, 100),
      retryBaseMs: integer(env, 'MESSAGE_RETRY_BASE_MS', 1_000, 1, 3_600_000),
      leaseMs: integer(env, 'MESSAGE_LEASE_SECONDS', 30, 1, 3_600) * 1000,
    },
    webhooks: webhooks(env, appEnv, session),
    requestLog: {
      enabled: oneOf(env, 'REQUEST_LOG', ['on', 'off'] as const, 'on') === 'on',
      buffer: integer(env, 'REQUEST_LOG_BUFFER', 10_000, 1, 1_000_000),
    },
    tracing: tracing(env),
    rateLimit: {
      banThreshold: integer(env, 'RATE_LIMIT_BAN_THRESHOLD', 20, 1, 1_000_000),
      banSeconds: integer(env, 'RATE_LIMIT_BAN_SECONDS', 900, 1, 86_400 * 30),
      onStoreError: oneOf(env, 'RATE_LIMIT_ON_STORE_ERROR', ['closed', 'open'] as const, 'closed'),
    },
  };
}
