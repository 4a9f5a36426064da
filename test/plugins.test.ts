import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import Fastify from 'fastify';
import { buildApp } from '../src/app.js';
import { systemClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import { createLog } from '../src/log.js';
import { NO_TRACING } from '../src/ops/tracing.js';
import { contextPlugin } from '../src/plugins/context.js';
import { openDatabase } from '../src/store/database.js';
import { captureLog, databaseOfItsOwn, newTenant } from './helpers.js';

function configFor(url: string, logLevel = 'silent') {
  return loadConfig({
    DATABASE_URL: url,
    LOG_LEVEL: logLevel,
    DEMO_ACCOUNT: 'false',
    ...(process.env.TEST_REDIS_URL && {
      REDIS_URL: process.env.TEST_REDIS_URL,
      REDIS_KEY_PREFIX: `test-${randomUUID()}:`,
    }),
  });
}

describe('the app as plugins (docs/decisions/0011-app-as-plugins.md)', () => {
  it('opens the database it is not given, and closes it, and /metrics’ port, with the app', async () => {
    const { url, drop } = await databaseOfItsOwn();
    const log = captureLog();
    const app = await buildApp({
      config: configFor(url, 'info'),
      startLater: true,
      logStream: log.stream,
    });
    try {
      // As src/server.ts does: migrate, wait for Redis, serve.
      await app.database.schema.migrate();
      await app.ready();
      assert.ok(await app.outages.untilAnswers('redis'));
      app.lifecycle.serve();
      await newTenant(app);
      const metrics = await app.listenMetrics('127.0.0.1', 0);
      assert.equal((await fetch(metrics)).status, 200);

      await app.close();
      await assert.rejects(app.database.ping(1_000));
      await assert.rejects(fetch(metrics));
      // Each closed by the plugin that opened it, in the reverse order of opening: the
      // requests (the last) are answered before the store (the first) closes.
      const closing = log
        .lines()
        .map((line) => String(line.msg))
        .filter((msg) => msg.startsWith('shutdown:'));
      assert.deepEqual(closing, [
        'shutdown: requests answered, listener closed',
        'shutdown: database closed',
      ]);
    } finally {
      await app.close();
      await drop();
    }
  });

  it('leaves open a database it is given: its caller closes it', async () => {
    const { url, drop } = await databaseOfItsOwn();
    const config = configFor(url);
    const database = openDatabase(config.databaseUrl, { poolSize: 2 });
    try {
      await database.schema.migrate();
      const app = await buildApp({ config, database });
      await app.ready();
      await app.close();
      await database.ping(1_000);
    } finally {
      await database.close();
      await drop();
    }
  });

  it('refuses a plugin whose dependencies are not registered before it', async () => {
    const config = configFor('sqlite::memory:');
    const app = Fastify();
    const basics = { config, clock: systemClock, log: createLog('silent'), tracing: NO_TRACING };
    await assert.rejects(async () => {
      await app.register(contextPlugin, basics);
    }, /dependency 'store' of plugin 'context' is not registered/);
    await app.close();
  });
});
