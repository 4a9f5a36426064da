import { buildApp } from './app.js';
import { systemClock } from './clock.js';
import { type Config, ConfigError, loadConfig } from './config.js';
import { createDemoAccountIfEmpty, type DemoAccount } from './domain/demo.js';
import { migrate, openDatabase } from './store/database.js';

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
      `API docs: ${baseUrl}/docs`,
      '',
    ].join('\n'),
  );
}

const config = loadConfigOrExit();
const database = openDatabase(config.databaseUrl, { poolSize: config.databasePoolSize });
await migrate(database);
const demo = config.demoAccount
  ? await createDemoAccountIfEmpty(database.db, systemClock, config.env)
  : undefined;
const app = await buildApp({ config, database });
await app.listen({ host: config.host, port: config.port });
const address = app.server.address();
const port = typeof address === 'object' && address ? address.port : config.port;
const host = config.host.includes(':') ? `[${config.host}]` : config.host;
if (demo) printDemo(demo, `http://${host}:${port}`);

let stopping = false;
async function stop(signal: string): Promise<void> {
  if (stopping) {
    app.log.warn({ signal }, 'second signal, exiting at once');
    process.exit(1);
  }
  stopping = true;
  app.log.info({ signal }, 'shutting down: finishing in-flight requests');
  await app.close();
  await database.close();
  process.exit(0);
}
process.on('SIGTERM', () => void stop('SIGTERM'));
process.on('SIGINT', () => void stop('SIGINT'));
