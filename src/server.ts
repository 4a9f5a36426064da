// First: on an unsupported Node.js line, one sentence and exit 1, before the SQLite driver loads.
import './preflight.js';
import { buildApp } from './app.js';
import { systemClock } from './clock.js';
import { type Config, ConfigError, loadConfig } from './config.js';
import { createDemoAccountIfEmpty, type DemoAccount } from './demo.js';
import {
  databaseFailure,
  listenFailure,
  StartupError,
  sqliteFailure,
} from './ops/startup-errors.js';
import { SchemaMismatchError } from './store/database.js';

// What this process makes is its owner's alone: the SQLite files are made private explicitly
// (src/store/sqlite-files.ts); the umask covers anything else a later change may write.
process.umask(0o077);

function loadConfigOrExit(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  }
}

function printDemo(demo: DemoAccount, baseUrl: string): void {
  // Written to stderr, not the log: it is shown once, to the person who started us, and stdout
  // stays JSON lines for whatever reads them. It holds a password: never in the log.
  process.stderr.write(
    [
      '',
      'Demo account created (development only):',
      `  email:    ${demo.email}`,
      `  password: ${demo.password}`,
      `  API key:  ${demo.key}`,
      '',
      'Try it:',
      `  curl -H "Authorization: Bearer ${demo.key}" ${baseUrl}/v1/pets`,
      `  curl -X POST -H "Authorization: Bearer ${demo.key}" -H 'Content-Type: application/json' \\`,
      `       -d '{"message":"Hello!"}' ${baseUrl}/messages`,
      '',
      `Developer portal (sign in with the email and password above): ${baseUrl}/portal`,
      `API docs: ${baseUrl}/docs`,
      '',
      'Lost this key or password? Run:',
      `  npm run cli -- keys create --email ${demo.email}`,
      `  npm run cli -- accounts reset-password --email ${demo.email}`,
      "or start afresh: stop the server, delete the ./data folder (SQLite's default), start again.",
      '',
    ].join('\n'),
  );
}

/**
 * Start-up failures an operator can fix get one clear line, not a stack; the stack follows only
 * at LOG_LEVEL=debug (or trace).
 */
function exitWith(message: string, err?: unknown): never {
  process.stderr.write(`${message}\n`);
  if (err instanceof Error && err.stack && debugging()) process.stderr.write(`${err.stack}\n`);
  process.exit(1);
}

function debugging(): boolean {
  return config.logLevel === 'debug' || config.logLevel === 'trace';
}

/** Anything else that stops the start: its message, and where to see more. */
function couldNotStart(err: unknown): never {
  const message = err instanceof Error ? err.message : String(err);
  exitWith(
    `Could not start: ${message}${debugging() ? '' : ' (LOG_LEVEL=debug shows the details)'}`,
    err,
  );
}

const config = loadConfigOrExit();
// The app opens the database (and closes it, last, in app.close()). The instance listens before
// its database and Redis answer (they may start after it, in any order): until they do and the
// schema is current, /readyz and the API answer 503.
const app = await buildAppOrExit();
const { database, outages, lifecycle } = app;
const { log } = app.ctx;

async function buildAppOrExit() {
  try {
    return await buildApp({ config, startLater: true });
  } catch (err) {
    exitWith(sqliteFailure(err, config.databaseUrl) ?? couldNotStart(err), err);
  }
}
// Fastify logs "Server listening at …" (at info) itself.
try {
  await app.listen({ host: config.host, port: config.port });
} catch (err) {
  exitWith(listenFailure(err, config.host, config.port) ?? couldNotStart(err), err);
}
if (config.metrics.mode === 'port') {
  const { host, port } = config.metrics;
  try {
    log.info({ url: await app.listenMetrics(host, port) }, 'metrics listening');
  } catch (err) {
    exitWith(listenFailure(err, host, port, 'METRICS_') ?? couldNotStart(err), err);
  }
}
const address = app.server.address();
const port = typeof address === 'object' && address ? address.port : config.port;
const host = config.host.includes(':') ? `[${config.host}]` : config.host;
bringUp().catch((err: unknown) => {
  if (err instanceof StartupError) exitWith(err.message, err);
  couldNotStart(err);
});

/**
 * Waits for the database (retrying with back-off, a line per try), brings its schema up to
 * date, waits for Redis, then serves. A schema of another version stops the process; the
 * database going away midway is waited for again.
 */
async function bringUp(): Promise<void> {
  let demo: DemoAccount | undefined;
  for (;;) {
    if (!(await outages.untilAnswers('database'))) return;
    try {
      if (config.migrateOnStart) {
        for (const migration of await database.schema.migrate()) {
          log.info({ migration }, `migration ${migration} applied`);
        }
      } else await database.schema.assertCurrent();
      if (config.demoAccount) {
        demo = await createDemoAccountIfEmpty(database, systemClock, app.passwords, config.env);
      }
      break;
    } catch (err) {
      if (err instanceof SchemaMismatchError) exitWith(err.message);
      const reason = databaseFailure(err, config.databaseUrl);
      if (reason !== undefined) exitWith(reason, err);
      if (!outages.databaseFailed(err)) throw err;
    }
  }
  if (!(await outages.untilAnswers('redis'))) return;
  lifecycle.serve();
  log.info('ready: serving requests');
  if (demo) printDemo(demo, `http://${host}:${port}`);
}

let stopping = false;
/**
 * Graceful shutdown: the app closes what it opened, each plugin its own (src/app.ts): /readyz
 * turns 503, the listener stops taking connections, requests in flight are answered (for half
 * of SHUTDOWN_TIMEOUT_SECONDS at most), the worker finishes (or, on BullMQ, hands back) what
 * it holds, the writes queued are committed, pools close, exit 0. Past
 * SHUTDOWN_TIMEOUT_SECONDS, or on a second signal, exit 1 at once.
 */
async function stop(signal: string): Promise<void> {
  if (stopping) {
    log.warn({ signal }, 'second signal, exiting at once');
    process.exit(1);
  }
  stopping = true;
  log.info(
    { signal, deadlineMs: config.shutdownTimeoutMs },
    'shutting down: finishing in-flight requests',
  );
  setTimeout(() => {
    log.error({ deadlineMs: config.shutdownTimeoutMs }, 'shutdown deadline passed, exiting');
    process.exit(1);
  }, config.shutdownTimeoutMs).unref();
  // Connections that go idle after their last answer are closed as they do.
  setInterval(() => app.server.closeIdleConnections(), 250).unref();
  await app.close();
  log.info('shut down, exiting');
  process.exit(0);
}
process.on('SIGTERM', () => void stop('SIGTERM'));
process.on('SIGINT', () => void stop('SIGINT'));
