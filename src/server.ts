import { buildApp } from './app.js';
import { systemClock } from './clock.js';
import { type Config, ConfigError, loadConfig } from './config.js';
import { createDemoAccountIfEmpty, type DemoAccount } from './domain/demo.js';
import { startMetricsServer } from './ops/metrics-server.js';
import {
  assertSchemaCurrent,
  migrate,
  openDatabase,
  SchemaMismatchError,
} from './store/database.js';

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
  // Written to the terminal, not the log: it is shown once, to the person who started us.
  process.stdout.write(
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
    ].join('\n'),
  );
}

/** Start-up failures an operator can fix get one clear line, not a stack. */
function exitWith(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

/** Why the listener could not be opened, in a sentence, for the mistakes people make. */
function listenFailure(err: unknown, host: string, port: number): string | undefined {
  const code = (err as { code?: unknown }).code;
  const where = `${host}:${port}`;
  if (code === 'EADDRINUSE') {
    return `Port ${port} is already in use on ${host}: stop what listens there, or start with PORT=<another port>.`;
  }
  if (code === 'EACCES')
    return `Not allowed to listen on ${where}: ports below 1024 need privileges; use PORT=8080.`;
  if (code === 'EADDRNOTAVAIL') return `HOST=${host} is not an address of this machine.`;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `HOST=${host} is not a known host name.`;
  return undefined;
}

const config = loadConfigOrExit();
const database = openDatabase(config.databaseUrl, {
  poolSize: config.databasePoolSize,
  statementTimeoutMs: config.databaseStatementTimeoutMs,
});
// The instance listens before its database and Redis answer (they may start after it, in any
// order): until they do and the schema is current, /readyz and the API answer 503.
const app = await buildApp({ config, database, startLater: true });
const { log, outages, lifecycle } = app.ctx;
let listening: string;
try {
  listening = await app.listen({ host: config.host, port: config.port });
} catch (err) {
  const reason = listenFailure(err, config.host, config.port);
  if (reason === undefined) throw err;
  exitWith(reason);
}
log.info(`Server listening at ${listening}`);
const metricsServer =
  config.metrics.mode === 'port'
    ? await startMetricsServer(app.ctx.metrics, config.metrics.host, config.metrics.port)
    : undefined;
if (metricsServer) log.info({ url: metricsServer.url }, 'metrics listening');
const address = app.server.address();
const port = typeof address === 'object' && address ? address.port : config.port;
const host = config.host.includes(':') ? `[${config.host}]` : config.host;
bringUp().catch((err: unknown) => {
  log.fatal({ err }, 'could not start');
  process.exit(1);
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
      await (config.migrateOnStart ? migrate(database) : assertSchemaCurrent(database));
      if (config.demoAccount) {
        demo = await createDemoAccountIfEmpty(database, systemClock, config.env);
      }
      break;
    } catch (err) {
      if (err instanceof SchemaMismatchError) exitWith(err.message);
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
 * Graceful shutdown: /readyz turns 503, the listener stops taking connections, requests in
 * flight are answered, the worker finishes (or, on BullMQ, hands back) what it holds, pools
 * close, exit 0. Past SHUTDOWN_TIMEOUT_SECONDS, or on a second signal, exit 1 at once.
 */
async function stop(signal: string): Promise<void> {
  if (stopping) {
    log.warn({ signal }, 'second signal, exiting at once');
    process.exit(1);
  }
  stopping = true;
  lifecycle.draining = true;
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
  await metricsServer?.close();
  await database.close();
  log.info('shut down');
  process.exit(0);
}
process.on('SIGTERM', () => void stop('SIGTERM'));
process.on('SIGINT', () => void stop('SIGINT'));
