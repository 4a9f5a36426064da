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
async function orExit(step: Promise<unknown>): Promise<void> {
  try {
    await step;
  } catch (err) {
    if (!(err instanceof SchemaMismatchError)) throw err;
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  }
}

const config = loadConfigOrExit();
const database = openDatabase(config.databaseUrl, {
  poolSize: config.databasePoolSize,
  statementTimeoutMs: config.databaseStatementTimeoutMs,
});
await orExit(config.migrateOnStart ? migrate(database) : assertSchemaCurrent(database));
const demo = config.demoAccount
  ? await createDemoAccountIfEmpty(database.db, systemClock, config.env)
  : undefined;
const app = await buildApp({ config, database });
const listening = await app.listen({ host: config.host, port: config.port });
app.ctx.log.info(`Server listening at ${listening}`);
const metricsServer =
  config.metrics.mode === 'port'
    ? await startMetricsServer(app.ctx.metrics, config.metrics.host, config.metrics.port)
    : undefined;
if (metricsServer) app.ctx.log.info({ url: metricsServer.url }, 'metrics listening');
const address = app.server.address();
const port = typeof address === 'object' && address ? address.port : config.port;
const host = config.host.includes(':') ? `[${config.host}]` : config.host;
if (demo) printDemo(demo, `http://${host}:${port}`);

let stopping = false;
/**
 * Graceful shutdown: /readyz turns 503, the listener stops taking connections, requests in
 * flight are answered, the worker finishes (or, on BullMQ, hands back) what it holds, pools
 * close, exit 0. Past SHUTDOWN_TIMEOUT_SECONDS, or on a second signal, exit 1 at once.
 */
async function stop(signal: string): Promise<void> {
  if (stopping) {
    app.ctx.log.warn({ signal }, 'second signal, exiting at once');
    process.exit(1);
  }
  stopping = true;
  app.ctx.lifecycle.draining = true;
  app.ctx.log.info(
    { signal, deadlineMs: config.shutdownTimeoutMs },
    'shutting down: finishing in-flight requests',
  );
  setTimeout(() => {
    app.ctx.log.error(
      { deadlineMs: config.shutdownTimeoutMs },
      'shutdown deadline passed, exiting',
    );
    process.exit(1);
  }, config.shutdownTimeoutMs).unref();
  // Connections that go idle after their last answer are closed as they do.
  setInterval(() => app.server.closeIdleConnections(), 250).unref();
  await app.close();
  await metricsServer?.close();
  await database.close();
  app.ctx.log.info('shut down');
  process.exit(0);
}
process.on('SIGTERM', () => void stop('SIGTERM'));
process.on('SIGINT', () => void stop('SIGINT'));
