// First: on an unsupported Node.js line, one sentence and exit 1, before the SQLite driver loads.
import '../preflight.js';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { buildApp } from '../app.js';
import { systemClock } from '../clock.js';
import { type Config, ConfigError, databaseUrl, loadConfig, redactUrl } from '../config.js';
import { createDemoAccount, DEMO_EMAIL, hasDemoData, seedDemoData } from '../demo.js';
import {
  type AnnounceKeysChanged,
  allAccounts,
  createAccount,
  findAccountIdByEmail,
  nobodyToTell,
  setPassword,
  setPlan,
} from '../domain/accounts.js';
import { addApiKey, keySpec, listApiKeys, revokeKeyById, secretKey } from '../domain/api-keys.js';
import { Passwords } from '../domain/passwords.js';
import { isPlan } from '../domain/plans.js';
import type { Result } from '../domain/result.js';
import { isScope, SCOPES, type Scope } from '../domain/scopes.js';
import { UNANNOUNCED } from '../http/freshness.js';
import { createRateLimiter } from '../limits/create.js';
import type { Versions } from '../limits/store.js';
import { resetSandbox } from '../sandbox/domain.js';
import { BackupRefusedError, backupSqlite, type Progress, restoreSqlite } from '../store/backup.js';
import { commit } from '../store/change.js';
import { type Database, migrationNames, openDatabase } from '../store/database.js';

const USAGE = `Usage: animal-store <command> [options]

Commands:
  migrate [--status]                        Bring the database schema up to date, naming
                                            each migration applied; with --status, list
                                            those applied and pending, changing nothing.
  backup FILE                               Copy the SQLite database to FILE (a new file)
                                            while instances run; on PostgreSQL use pg_dump.
  restore FILE                              Replace the SQLite database with the backup
                                            FILE; refused while anything has it open.
  accounts list                             Every account: id, email, plan, created.
  accounts create --email E --password P    Create an account (Free plan).
  accounts reset-password --email E         Set a new password (random and printed once, or
      [--password P]                        --password) and sign out its portal sessions.
  accounts set-plan --email E --plan PLAN   Set the plan: free, pro, business, enterprise.
      [--per-minute N] [--per-day N]        Custom limits (enterprise only).
  keys list --email E                       The account's live keys (id, name, prefix, last
                                            used); secrets are never shown again.
  keys create --email E [--name NAME] [--scopes S,S…] [--origins O,O…]
                                            Create an API key; prints the secret once. With
                                            --scopes (e.g. pets:read,orders:write) it may do
                                            only that; without, it has full access. With
                                            --origins (e.g. https://shop.example), a
                                            publishable key for those pages' origins.
  keys revoke --key-id ID                   Revoke a key; refused from the next request on.
  sandbox reset --email E [--seed sample]   Remove the account's test data (catalogue,
                                            orders, messages, events, deliveries); with
                                            --seed sample, add a sample catalogue. Not on a
                                            production instance.
  seed [--email E]                          Demo categories and pets in an account (default:
                                            the demo account, created if missing); does
                                            nothing if they are there already.
  worker                                    Run only the message worker, until SIGTERM/SIGINT
                                            (pair with WORKER=off on the API instances).

Options:
  --json                                    One JSON document on stdout, for scripts (errors:
                                            {"error": …} on stderr).

Lost the demo key or password? keys create / accounts reset-password with
--email demo@animal-store.local, or delete ./data (SQLite) and start again.

The database is DATABASE_URL (default sqlite:./data/animal-store.db), as for the server;
migrate, backup and restore need no other setting.`;

/** `--scopes pets:read,orders:write`: null (full access) when not given. */
function scopesOption(value: string | undefined): Scope[] | null {
  if (value === undefined) return null;
  const given = value.split(',').map((scope) => scope.trim());
  const unknown = given.filter((scope) => !isScope(scope));
  if (unknown.length > 0 || given.length === 0) {
    throw new UsageError(
      `--scopes takes a comma-separated list of ${SCOPES.join(', ')}; ` +
        `not ${unknown.join(', ') || 'nothing'}`,
    );
  }
  return given.filter(isScope);
}

/** A wrong invocation: exit code 2 and the usage text. */
class UsageError extends Error {}
/** A command that ran and was refused (unknown email, duplicate…): exit code 1. */
class CommandFailure extends Error {}

const OPTIONS = {
  email: { type: 'string' },
  password: { type: 'string' },
  plan: { type: 'string' },
  'per-minute': { type: 'string' },
  'per-day': { type: 'string' },
  name: { type: 'string' },
  scopes: { type: 'string' },
  origins: { type: 'string' },
  'key-id': { type: 'string' },
  seed: { type: 'string' },
  json: { type: 'boolean' },
  status: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Parsed = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>;
type Options = Parsed['values'];

function required(options: Options, name: 'email' | 'password' | 'plan' | 'key-id'): string {
  const value = options[name];
  if (!value) throw new UsageError(`--${name} is required`);
  return value;
}

function positiveInteger(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  // The limits are 32-bit integer columns (PostgreSQL `integer`).
  if (!/^[1-9][0-9]{0,9}$/.test(value) || Number(value) > 2_147_483_647) {
    throw new UsageError(`${flag} must be a positive integer up to 2147483647`);
  }
  return Number(value);
}

function check<T>(result: Result<T>): T {
  if (!result.ok) throw new CommandFailure(result.message);
  return result.value;
}

/**
 * Runs `change` with the announcer of a change to an account's `what` (its keys and plan, or
 * its catalogue): through Redis in the shared mode (PostgreSQL with Redis), so every instance
 * sees the change on its next request. The change is committed before it is announced; if the
 * announcement fails, the command says so and fails. On SQLite there is nobody to tell: the
 * service sees another process's commit by itself.
 */
async function announcing<T>(
  config: Config,
  change: (announce: AnnounceKeysChanged) => Promise<T>,
  what: keyof Versions = 'keys',
): Promise<T> {
  if (!config.shared) return change(nobodyToTell);
  const limiter = await createRateLimiter(config, systemClock, { waitForRedis: true });
  try {
    return await change(async (accountId) => {
      try {
        await limiter.changed(accountId, what);
      } catch (err) {
        throw new CommandFailure(
          `the change is committed, but Redis could not be told (${(err as Error).message}): ` +
            `${UNANNOUNCED}.`,
        );
      }
    });
  } finally {
    await limiter.close();
  }
}

async function accountIdFor(database: Database, email: string): Promise<string> {
  const id = await findAccountIdByEmail(database.reader, email);
  if (!id) throw new CommandFailure(`No account with the email ${email}.`);
  return id;
}

/** What a command prints: a sentence for people, and the same as data for `--json`. */
interface Output {
  text: string;
  json: unknown;
}

type Command = (database: Database, options: Options, config: Config) => Promise<Output | string>;

/** A table of plain columns, padded, for the list commands. */
function table(rows: string[][]): string {
  const widths =
    rows[0]?.map((_, i) => Math.max(...rows.map((row) => (row[i] ?? '').length))) ?? [];
  return rows
    .map((row) =>
      row
        .map((cell, i) => cell.padEnd(widths[i] ?? 0))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** The store's own commands: they need DATABASE_URL alone, and migrate nothing first. */
type StoreCommand = (url: string, options: Options, file: string | undefined) => Promise<Output>;

const STORE_COMMANDS: Record<string, StoreCommand> = {
  migrate: async (url, options) => {
    // A store not made yet has every migration pending: looking does not make it.
    const path = url.startsWith('sqlite:') && url !== 'sqlite::memory:' && url.slice(7);
    if (options.status && path && !existsSync(path)) {
      const pending = migrationNames();
      return {
        text: pending.map((name) => `pending  ${name}`).join('\n'),
        json: { applied: [], pending, unknown: [] },
      };
    }
    const database = openDatabase(url, { poolSize: 1, warn });
    try {
      if (options.status) {
        const { applied, pending, unknown } = await database.schema.status();
        const lines = [
          ...applied.map(
            (name) =>
              `applied  ${name}${unknown.includes(name) ? ' (unknown to this version)' : ''}`,
          ),
          ...pending.map((name) => `pending  ${name}`),
        ];
        return { text: lines.join('\n') || 'No migrations.', json: { applied, pending, unknown } };
      }
      const applied = await database.schema.migrate();
      return {
        text: applied.length
          ? applied.map((name) => `Applied ${name}`).join('\n')
          : 'Schema is up to date.',
        json: { applied },
      };
    } finally {
      await database.close();
    }
  },
  backup: async (url, options, file) => {
    const target = fileArgument('backup', file);
    const { bytes } = await backupSqlite(
      sqlitePath(url, 'backup'),
      target,
      shown(options, 'Backing up'),
    );
    return { text: `Backed up to ${target} (${megabytes(bytes)}).`, json: { file: target, bytes } };
  },
  restore: async (url, options, file) => {
    const from = fileArgument('restore', file);
    const path = sqlitePath(url, 'restore');
    const { bytes } = await restoreSqlite(from, path, shown(options, 'Restoring'));
    return {
      text: `Restored ${path} from ${from} (${megabytes(bytes)}).`,
      json: { file: from, database: path, bytes },
    };
  },
};

const warn = (message: string) => process.stderr.write(`Warning: ${message}\n`);

function fileArgument(command: string, file: string | undefined): string {
  if (!file) throw new UsageError(`${command} takes a FILE`);
  return file;
}

function sqlitePath(url: string, command: string): string {
  if (!url.startsWith('sqlite:') || url === 'sqlite::memory:') {
    throw new CommandFailure(
      `${command} is for the embedded store (DATABASE_URL=sqlite:FILE); on PostgreSQL use ` +
        'pg_dump and pg_restore (docs/operations.md)',
    );
  }
  return url.slice('sqlite:'.length);
}

const megabytes = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;

/** Progress on stderr when it is a terminal (a line rewritten in place), else nothing. */
function shown(options: Options, doing: string): Progress {
  if (options.json || !process.stderr.isTTY) return () => {};
  return (done, total) => {
    const share = total > 0 ? Math.min(100, Math.floor((done / total) * 100)) : 100;
    process.stderr.write(`\r${doing}: ${share}%${share === 100 ? '\n' : ''}`);
  };
}

const COMMANDS: Record<string, Command> = {
  'accounts list': async (database) => {
    const accounts = await allAccounts(database.reader);
    const rows = accounts.map((a) => [a.id, a.email, a.plan, a.createdAt]);
    return {
      text: accounts.length
        ? table([['ID', 'EMAIL', 'PLAN', 'CREATED'], ...rows])
        : 'No accounts yet.',
      json: accounts,
    };
  },
  'accounts create': async (database, options, config) => {
    const account = check(
      await createAccount(database, systemClock, new Passwords(config.passwordHashCost), {
        email: required(options, 'email'),
        password: required(options, 'password'),
      }),
    );
    return {
      text: `Created account ${account.id} (${account.email}, plan ${account.plan}).`,
      json: account,
    };
  },
  'accounts reset-password': async (database, options, config) => {
    const email = required(options, 'email');
    const accountId = await accountIdFor(database, email);
    const given = options.password;
    const password = given ?? randomBytes(12).toString('base64url');
    const passwords = new Passwords(config.passwordHashCost);
    const { signedOut } = check(await setPassword(database, passwords, accountId, password));
    const sessions = `${signedOut} portal session${signedOut === 1 ? '' : 's'} signed out`;
    return {
      text: given
        ? `Password of ${email} changed; ${sessions}.`
        : `Password of ${email} reset; ${sessions}. The new password is shown only now:\n${password}`,
      json: { accountId, email, signedOutSessions: signedOut, ...(!given && { password }) },
    };
  },
  'accounts set-plan': async (database, options, config) => {
    const plan = required(options, 'plan');
    if (!isPlan(plan)) throw new UsageError('--plan must be free, pro, business or enterprise');
    const accountId = await accountIdFor(database, required(options, 'email'));
    const limits = {
      perMinute: positiveInteger(options['per-minute'], '--per-minute'),
      perDay: positiveInteger(options['per-day'], '--per-day'),
    };
    const account = check(
      await announcing(config, (announce) => setPlan(database, accountId, plan, limits, announce)),
    );
    return `Account ${account.id} is on ${account.plan}: ${account.limits.perMinute}/minute, ${account.limits.perDay}/day.`;
  },
  'keys list': async (database, options) => {
    const email = required(options, 'email');
    const keys = await listApiKeys(database.reader, await accountIdFor(database, email));
    const rows = keys.map((k) => [
      k.id,
      k.name ?? '',
      `${k.prefix}…`,
      k.allowedOrigins !== null
        ? `publishable from ${k.allowedOrigins.join(',')}`
        : k.scopes === null
          ? 'full access'
          : k.scopes.join(','),
      k.createdAt,
      k.lastUsedAt ?? 'never',
    ]);
    return {
      text: keys.length
        ? table([['ID', 'NAME', 'PREFIX', 'SCOPES', 'CREATED', 'LAST USED'], ...rows])
        : `No live keys for ${email}: create one with keys create --email ${email}.`,
      json: keys,
    };
  },
  'keys create': async (database, options, config) => {
    const name = options.name ?? null;
    const spec =
      options.origins === undefined
        ? secretKey(name, scopesOption(options.scopes))
        : check(
            keySpec({
              name,
              type: 'publishable',
              allowedOrigins: options.origins.split(',').map((origin) => origin.trim()),
              ...(options.scopes !== undefined && { scopes: scopesOption(options.scopes) }),
            }),
          );
    const accountId = await accountIdFor(database, required(options, 'email'));
    const { key, secret } = check(
      await commit(database, addApiKey(systemClock, config.env, accountId, spec)),
    );
    return {
      text: `Created key ${key.id}. The secret is shown only now:\n${secret}`,
      json: { ...key, secret },
    };
  },
  'keys revoke': async (database, options, config) => {
    const keyId = required(options, 'key-id');
    check(
      await announcing(config, (announce) => revokeKeyById(database, systemClock, keyId, announce)),
    );
    return { text: `Revoked key ${keyId}.`, json: { revoked: keyId } };
  },
  'sandbox reset': async (database, options, config) => {
    const email = required(options, 'email');
    const seed = options.seed;
    if (seed !== undefined && seed !== 'sample') {
      throw new CommandFailure(`--seed takes sample, not ${seed}.`);
    }
    const accountId = await accountIdFor(database, email);
    const { removed, seeded } = await announcing(
      config,
      async (announce) => {
        const done = check(
          await commit(
            database,
            resetSandbox(systemClock, config.env, accountId, seed === 'sample'),
          ),
        );
        await announce(accountId);
        return done;
      },
      'data',
    );
    const counts = Object.entries(removed)
      .map(([kind, n]) => `${n} ${kind}`)
      .join(', ');
    const sample = seeded
      ? ` Added the sample: ${seeded.categories} categories, ${seeded.pets} pets, ${seeded.orders} order.`
      : '';
    return { text: `Reset ${email}: removed ${counts}.${sample}`, json: { removed, seeded } };
  },
  worker: async (database, _options, config) => {
    // The service itself, listening nowhere: the same capabilities, their workers (the message
    // worker, the webhook dispatcher) and housekeeping started as in any instance.
    const app = await buildApp({ config: { ...config, worker: true }, database });
    await app.ready();
    app.log.info({ queue: app.queue.kind }, 'message worker and webhook dispatcher started');
    await new Promise<void>((resolve) => {
      process.once('SIGTERM', resolve);
      process.once('SIGINT', resolve);
    });
    app.log.info('message worker stopping: finishing messages in hand');
    await app.close();
    return 'Worker stopped.';
  },
  seed: async (database, options, config) => {
    const email = options.email ?? DEMO_EMAIL;
    const demo =
      email === DEMO_EMAIL
        ? await createDemoAccount(
            database,
            systemClock,
            new Passwords(config.passwordHashCost),
            config.env,
          )
        : undefined;
    if (demo) {
      return {
        text: `Created the demo account ${demo.email} (password ${demo.password}) with demo pets.\nAPI key: ${demo.key}`,
        json: { created: true, email: demo.email, password: demo.password, key: demo.key },
      };
    }
    const accountId = await accountIdFor(database, email);
    if (await hasDemoData(database.reader, accountId)) {
      return {
        text: `${email} has the demo data already: nothing added.`,
        json: { created: false, email, pets: 0 },
      };
    }
    const pets = await commit(database, {
      work: (tx) => seedDemoData(tx, systemClock, accountId),
      options: { numbersFor: accountId },
    });
    return {
      text: `Added 3 categories and ${pets} pets to ${email}.`,
      json: { created: false, email, pets },
    };
  },
};

export async function run(
  argv: string[],
  env = process.env,
): Promise<{ code: number; out: string }> {
  const result = await runCommand(argv, env);
  if ('out' in result) return result;
  // Scripts read errors as JSON too; the usage text is for people.
  if (argv.includes('--json'))
    return { code: result.code, out: JSON.stringify({ error: result.error }) };
  if (result.code === 1) return { code: 1, out: `Error: ${result.error}` };
  return { code: 2, out: result.usage ? `${result.error}\n\n${USAGE}` : result.error };
}

/** A command that failed (1), or was not understood (2: with the usage text, if `usage`). */
type Failed = { code: 1 | 2; error: string; usage?: boolean };

async function runCommand(
  argv: string[],
  env: Record<string, string | undefined>,
): Promise<{ code: number; out: string } | Failed> {
  let parsed: Parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    return { code: 2, error: (err as Error).message, usage: true };
  }
  const name = parsed.positionals.join(' ');
  if (parsed.values.help || name === '' || name === 'help') return { code: 0, out: USAGE };
  const [first = '', file, ...extra] = parsed.positionals;
  const storeCommand = STORE_COMMANDS[first];
  if (storeCommand && extra.length === 0 && (file === undefined || first !== 'migrate')) {
    return runStoreCommand(storeCommand, parsed.values, file, env);
  }
  const command = COMMANDS[name];
  if (!command) return { code: 2, error: `Unknown command "${name}".`, usage: true };

  let config: Config;
  try {
    config = loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return { code: 2, error: err.message };
    throw err;
  }
  // Trouble that fails no command (a SQLite checkpoint that failed): said, not hidden.
  const database = openDatabase(config.databaseUrl, { poolSize: 2, warn });
  try {
    // Like a start: migrate, unless the deploy does it (then the schema must be current).
    await (config.migrateOnStart ? database.schema.migrate() : database.schema.assertCurrent());
    return printed(await command(database, parsed.values, config), parsed.values);
  } catch (err) {
    return failed(err, config.databaseUrl);
  } finally {
    await database.close();
  }
}

async function runStoreCommand(
  command: StoreCommand,
  options: Options,
  file: string | undefined,
  env: Record<string, string | undefined>,
): Promise<{ code: number; out: string } | Failed> {
  let url: string;
  try {
    url = databaseUrl(env);
  } catch (err) {
    if (err instanceof ConfigError) return { code: 2, error: err.message };
    throw err;
  }
  try {
    return printed(await command(url, options, file), options);
  } catch (err) {
    return failed(err, url);
  }
}

function printed(output: Output | string, options: Options): { code: number; out: string } {
  if (typeof output === 'string') {
    return { code: 0, out: options.json ? JSON.stringify({ message: output }) : output };
  }
  return { code: 0, out: options.json ? JSON.stringify(output.json, null, 2) : output.text };
}

function failed(err: unknown, url: string): Failed {
  if (err instanceof UsageError) return { code: 2, error: err.message, usage: true };
  if (err instanceof CommandFailure || err instanceof BackupRefusedError) {
    return { code: 1, error: err.message };
  }
  return { code: 1, error: `${(err as Error).message} (database ${redactUrl(url)})` };
}

// Run when executed directly (`npm run cli`, `node dist/cli/main.js`); bin/animal-store.js imports run().
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { code, out } = await run(process.argv.slice(2));
  (code === 0 ? process.stdout : process.stderr).write(`${out}\n`);
  process.exitCode = code;
}
