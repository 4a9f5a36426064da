import { createHash, randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import pg from 'pg';
import { type AppOptions, buildApp } from '../src/app.js';
import { CAPABILITIES } from '../src/capabilities.js';
import { type Clock, systemClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import { createAccount, nobodyToTell, setPlan } from '../src/domain/accounts.js';
import { createApiKey, secretKey } from '../src/domain/api-keys.js';
import { Passwords } from '../src/domain/passwords.js';
import type { Limits, Plan } from '../src/domain/plans.js';
import { saysNextStep } from '../src/errors.js';
import { messages } from '../src/messages/plugin.js';
import type { MessageSink } from '../src/messages/sink.js';
import { type Database, openDatabase } from '../src/store/database.js';

/**
 * Passwords hashed cheaply (N=2^10, ~1 ms a hash instead of ~50): the suites sign up and sign
 * in hundreds of times, and at the production cost scrypt alone took ~20 s. Apps get it through
 * their config; code below the HTTP layer through `testPasswords`.
 */
export const CHEAP_HASHES = { PASSWORD_HASH_COST: '10' };
export const testPasswords = new Passwords(Number(CHEAP_HASHES.PASSWORD_HASH_COST));

/** Waits until `check` holds, polling every 20 ms; fails the test past `timeoutMs`. */
export async function until(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Webhook retries and polling in milliseconds, so deliveries and retries take no time. */
export const FAST = {
  WEBHOOK_RETRY_BASE_MS: '30',
  WEBHOOK_RETRY_MAX_MS: '200',
  WEBHOOK_POLL_MS: '20',
};

/** PostgreSQL when CI sets TEST_DATABASE_URL; otherwise a fresh SQLite file per app. */
export function testDatabaseUrl(): { url: string; cleanup: () => void } {
  const pg = process.env.TEST_DATABASE_URL;
  if (pg) return { url: pg, cleanup: () => {} };
  return sqliteDatabaseUrl();
}

/**
 * A store no other test file shares: a new PostgreSQL database beside TEST_DATABASE_URL's, or a
 * new SQLite file. For tests whose workers must not meet rows of suites running beside them
 * (a worker with the real clock claims any row whose lease has run out, whoever wrote it).
 * `migrated`: on PostgreSQL a copy of a migrated template (CREATE DATABASE … TEMPLATE), where
 * migrating a new database each time cost the PostgreSQL run seconds; empty otherwise.
 */
export async function databaseOfItsOwn(
  options: { migrated?: boolean } = {},
): Promise<{ url: string; drop: () => Promise<void> }> {
  const pg = process.env.TEST_DATABASE_URL;
  if (!pg) return testDatabase();
  if (!options.migrated) return freshPostgres(pg);
  templateName ??= migratedTemplate(pg);
  return freshPostgres(pg, 'as_test', await templateName);
}

let templateName: Promise<string> | undefined;

/**
 * A migrated database to copy, made once per migration set and kept (its name is a hash of the
 * migrations' files: changed migrations get a template of their own). Processes that make it at once
 * each make their own and rename it into place; the one that loses drops its copy.
 */
async function migratedTemplate(base: string): Promise<string> {
  const folder = new URL('../src/store/migrations/', import.meta.url);
  const hash = createHash('sha256');
  for (const file of readdirSync(folder).sort()) hash.update(readFileSync(new URL(file, folder)));
  const name = `as_template_${hash.digest('hex').slice(0, 16)}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  try {
    const { rowCount } = await admin.query('select 1 from pg_database where datname = $1', [name]);
    if (rowCount) return name;
    const made = await freshPostgres(base, 'as_template_new');
    const database = openDatabase(made.url, { poolSize: 1 });
    try {
      await database.schema.migrate();
    } finally {
      await database.close();
    }
    try {
      await admin.query(`ALTER DATABASE ${new URL(made.url).pathname.slice(1)} RENAME TO ${name}`);
    } catch {
      await made.drop(); // another process's template is in place
    }
    return name;
  } finally {
    await admin.end();
  }
}

/** testDatabaseUrl, with an async drop like databaseOfItsOwn's. */
function testDatabase(): { url: string; drop: () => Promise<void> } {
  const { url, cleanup } = testDatabaseUrl();
  return { url, drop: async () => cleanup() };
}

/** The stores a migration is tested on: SQLite always, PostgreSQL when TEST_DATABASE_URL is set. */
export const dialects = [
  'sqlite',
  ...(process.env.TEST_DATABASE_URL ? ['postgres' as const] : []),
] as const;

/** An empty database of its own on `dialect`'s store: migrations are tested from their start. */
export async function emptyDatabase(
  dialect: 'sqlite' | 'postgres',
): Promise<{ url: string; drop: () => Promise<void> }> {
  if (dialect === 'sqlite') {
    const made = sqliteDatabaseUrl();
    return { url: made.url, drop: async () => made.cleanup() };
  }
  return freshPostgres(process.env.TEST_DATABASE_URL as string);
}

/** A fresh SQLite file, whatever TEST_DATABASE_URL says (for SQLite-only behaviour). */
export function sqliteDatabaseUrl(): { url: string; cleanup: () => void } {
  const file = join(tmpdir(), `animal-store-test-${randomUUID()}.db`);
  return {
    url: `sqlite:${file}`,
    cleanup: () => {
      for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true });
    },
  };
}

/** A migrated store at `url` and a new account in it, for tests below the HTTP layer. */
export async function storeWithAccount(
  url: string,
  clock: Clock = systemClock,
): Promise<{ database: Database; accountId: string }> {
  const database = openDatabase(url, { poolSize: 4 });
  await database.schema.migrate();
  const account = await createAccount(database, clock, testPasswords, {
    email: `store-${randomUUID()}@example.com`,
    password: 'long enough password',
  });
  if (!account.ok) throw new Error(account.message);
  return { database, accountId: account.value.id };
}

export interface TestApp {
  app: FastifyInstance;
  database: Database;
  /** The database URL, for a second instance on the same data. */
  databaseUrl: string;
  close: () => Promise<void>;
}

export async function startApp(
  options: {
    env?: Record<string, string>;
    /** A store no other suite's app shares (see below); implied by a clock of its own. */
    ownStore?: boolean;
    /** What the app is given of the database opened for it (a fault injected, say). */
    wrapDatabase?: (database: Database) => Database;
    /** Where the messages' worker delivers (the log by default). */
    sink?: MessageSink;
  } & Omit<AppOptions, 'config' | 'database'> = {},
): Promise<TestApp> {
  const { env, ownStore, wrapDatabase, sink, ...appOptions } = options;
  if (sink) {
    appOptions.capabilities = CAPABILITIES.map((c) => (c.name === 'messages' ? messages(sink) : c));
  }
  // Every app's worker, dispatcher and housekeeping act on all the rows of its store. A suite
  // that times them needs a store of its own: on a shared one, another suite's dispatcher
  // (its retry back-off 30 s, not the milliseconds a test sets) takes its deliveries, and an
  // app with a clock of its own treats other suites' rows as if it were that time for them
  // (a clock in 2030 sweeps their events and claims their leased messages as stranded).
  const { url, drop } =
    ownStore || appOptions.clock ? await databaseOfItsOwn({ migrated: true }) : testDatabase();
  const config = loadConfig({
    DATABASE_URL: url,
    LOG_LEVEL: 'silent',
    DEMO_ACCOUNT: 'false',
    ...CHEAP_HASHES,
    // Redis when CI sets TEST_REDIS_URL, with keys of this app alone unless a test shares them.
    ...(process.env.TEST_REDIS_URL && {
      REDIS_URL: process.env.TEST_REDIS_URL,
      REDIS_KEY_PREFIX: `test-${randomUUID()}:`,
    }),
    ...env,
  });
  const database = openDatabase(config.databaseUrl, { poolSize: 4 });
  await database.schema.migrate();
  const app = await buildApp({
    config,
    database: wrapDatabase ? wrapDatabase(database) : database,
    ...appOptions,
  });
  let closed = false;
  return {
    app,
    database,
    databaseUrl: config.databaseUrl,
    close: async () => {
      if (closed) return;
      closed = true;
      await app.close();
      await database.close();
      await drop();
    },
  };
}

/** The least a production instance needs: its addresses and a session secret. */
export const PRODUCTION_ENV: Readonly<Record<string, string>> = {
  APP_ENV: 'production',
  PUBLIC_BASE_URL: 'https://api.example.com/v1',
  MESSAGES_BASE_URL: 'https://messages.example.com',
  SESSION_SECRET: 'a production session secret of 32+ chars',
};

export function basic(email: string, password: string): string {
  return `Basic ${Buffer.from(`${email}:${password}`).toString('base64')}`;
}

/** Puts an account on a plan through the app's own store, telling its key cache (as the CLI
 * would): from the next request on, the account's keys carry the new limits. */
export async function planAccount(
  app: FastifyInstance,
  accountId: string,
  plan: Plan,
  limits: Partial<Limits> = {},
): Promise<void> {
  const planned = await setPlan(app.ctx.database, accountId, plan, limits, app.ctx.keysChanged);
  if (!planned.ok) throw new Error(planned.message);
}

export interface Tenant {
  accountId: string;
  email: string;
  password: string;
  key: string;
  keyId: string;
  /** Headers that authenticate as this tenant's key. */
  headers: { authorization: string };
}

/**
 * A client address of its own for each request without a valid key, so the per-IP limit can
 * never turn an expected answer into a 429.
 */
let ipCounter = 0;
export function freshIp(): string {
  ipCounter++;
  return `10.${(ipCounter >> 16) & 255}.${(ipCounter >> 8) & 255}.${ipCounter & 255}`;
}

/**
 * A new account with one API key, made through the public API like a user would. Unless a
 * plan is asked for, the account gets limits high enough that tests of other things never meet
 * them (rate-limit tests ask for `free`).
 */
export async function newTenant(
  app: FastifyInstance,
  options: { plan?: Plan } = {},
): Promise<Tenant> {
  const email = `user-${randomUUID()}@example.com`;
  const password = 'correct horse battery staple';
  const account = await app.inject({
    method: 'POST',
    url: '/v1/accounts',
    payload: { email, password },
    remoteAddress: freshIp(),
  });
  if (account.statusCode !== 201) throw new Error(`sign-up failed: ${account.body}`);
  const plan = options.plan ?? 'enterprise';
  const limits = plan === 'enterprise' && !options.plan ? { perMinute: 1e6, perDay: 1e8 } : {};
  await planAccount(app, account.json().id, plan, limits);
  const key = await app.inject({
    method: 'POST',
    url: '/v1/keys',
    headers: { authorization: basic(email, password) },
    payload: { name: 'test' },
  });
  if (key.statusCode !== 201) throw new Error(`key creation failed: ${key.body}`);
  const { key: secret, id } = key.json();
  return {
    accountId: account.json().id,
    email,
    password,
    key: secret,
    keyId: id,
    headers: { authorization: `Bearer ${secret}` },
  };
}

/** `app.inject` as a tenant. */
export function as(
  app: FastifyInstance,
  tenant: Tenant,
  options: InjectOptions,
): Promise<LightMyRequestResponse> {
  return app.inject({ ...options, headers: { ...tenant.headers, ...options.headers } });
}

export async function createCategory(
  app: FastifyInstance,
  tenant: Tenant,
  name = 'Dogs',
): Promise<{ id: number; name: string }> {
  const res = await as(app, tenant, { method: 'POST', url: '/v1/categories', payload: { name } });
  if (res.statusCode !== 201) throw new Error(`category creation failed: ${res.body}`);
  return res.json();
}

/** A webhook endpoint of the tenant's (201 asserted): its id and its signing secret. */
export async function addEndpoint(
  app: FastifyInstance,
  tenant: Tenant,
  url: string,
  events: string[] = ['*'],
): Promise<{ id: string; secret: string }> {
  const res = await as(app, tenant, {
    method: 'POST',
    url: '/v1/webhooks',
    payload: { url, events },
  });
  if (res.statusCode !== 201) throw new Error(`endpoint not added: ${res.statusCode} ${res.body}`);
  return res.json();
}

export async function createPet(
  app: FastifyInstance,
  tenant: Tenant,
  pet: { name?: string; categoryId: number; status?: string },
): Promise<{ id: number; name: string; categoryId: number; status: string }> {
  const res = await as(app, tenant, {
    method: 'POST',
    url: '/v1/pets',
    payload: { name: 'Rex', ...pet },
  });
  if (res.statusCode !== 201) throw new Error(`pet creation failed: ${res.body}`);
  return res.json();
}

/** Asserts the seed's Error shape, its message saying what to do next, and returns the code. */
export function errorCode(res: LightMyRequestResponse): string {
  const body = res.json();
  if (typeof body.code !== 'string' || typeof body.message !== 'string') {
    throw new Error(`not an Error body: ${res.body}`);
  }
  if (body.status !== res.statusCode) {
    throw new Error(`Error status ${body.status} differs from HTTP ${res.statusCode}`);
  }
  if (!saysNextStep(body.message)) throw new Error(`a message without a next step: ${res.body}`);
  return body.code;
}

/**
 * An account with a high-limit key, written straight into the store at `url` (migrated first):
 * for tests that start the server as a process of its own. Returns the key's secret.
 */
export async function storeKey(url: string): Promise<string> {
  return (await storeAccountKey(url)).secret;
}

/** As storeKey, with the account's id. */
export async function storeAccountKey(url: string): Promise<{ secret: string; accountId: string }> {
  const { database, accountId } = await storeWithAccount(url);
  try {
    await setPlan(database, accountId, 'enterprise', { perMinute: 1e6, perDay: 1e8 }, nobodyToTell);
    const key = await database.write((tx) =>
      createApiKey(tx, systemClock, 'development', accountId, secretKey(null)),
    );
    return { secret: key.secret, accountId };
  } finally {
    await database.close();
  }
}

/** The URL of a page's `Link: <…>; rel="next"`, or undefined on the last page. */
export function nextLinkUrl(res: LightMyRequestResponse): URL | undefined {
  const target = /<([^>]+)>; rel="next"/.exec(String(res.headers.link ?? ''))?.[1];
  return target === undefined ? undefined : new URL(target);
}

/** The path and query of a URL, for `app.inject`. */
export function pathOf(url: URL): string {
  return url.pathname + url.search;
}

/**
 * A new, empty PostgreSQL database beside the one `base` names (for tests, and the benchmark,
 * that need a store of their own), and how to drop it.
 */
export async function freshPostgres(
  base: string,
  prefix = 'as_test',
  template?: string,
): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `${prefix}_${randomUUID().replaceAll('-', '').slice(0, 16)}`;
  // A plain client: CREATE DATABASE cannot run in a transaction, and every write of the
  // service's own runs in one (group commit).
  const admin = async (statement: string) => {
    const client = new pg.Client({ connectionString: base });
    await client.connect();
    try {
      await client.query(statement);
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ''}`);
  const url = new URL(base);
  url.pathname = `/${name}`;
  return {
    url: url.href,
    drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

/** A log stream for `logStream`, and what was written to it, as text or as parsed lines. */
export function captureLog() {
  let text = '';
  const stream = new Writable({
    write(chunk, _enc, done) {
      text += String(chunk);
      done();
    },
  });
  return {
    stream,
    text: () => text,
    lines: () =>
      text
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}

/** A clock that stands still until the test moves it: rate-limit windows do not turn. */
export function stillClock(): Clock & { advance(ms: number): void } {
  let now = Date.now();
  return {
    now: () => new Date(now),
    advance: (ms) => {
      now += ms;
    },
  };
}

/**
 * Holds the store's writer: resolves once a write of its own has begun, so nothing else can be
 * written until `release`. Waiting for the write to begin matters: on PostgreSQL a write begins
 * only once its connection is ready, and a release sent before that would be lost (the write,
 * and the test, would wait for ever).
 */
export async function holdWriter(
  database: Database,
): Promise<{ release: () => void; done: Promise<void> }> {
  let release = () => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let begin = () => {};
  const begun = new Promise<void>((resolve) => {
    begin = resolve;
  });
  const done = database.write(async () => {
    begin();
    await gate;
  });
  await Promise.race([begun, done]);
  return { release, done };
}
