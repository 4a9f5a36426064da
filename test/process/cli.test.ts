/**
 * The CLI as a process of its own: the worker command beside an API instance, and the exit
 * codes of a bad invocation.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { openDatabase } from '../../src/store/database.js';
import { as, newTenant, startApp, testDatabaseUrl } from '../helpers.js';

describe('animal-store CLI, as a process', () => {
  const { url, cleanup } = testDatabaseUrl();
  // The CLI and the service share the Redis (and its key prefix) when there is one, as in a
  // deployment.
  const redis: Record<string, string> = process.env.TEST_REDIS_URL
    ? { REDIS_URL: process.env.TEST_REDIS_URL, REDIS_KEY_PREFIX: `test-${randomUUID()}:` }
    : {};
  const env = { DATABASE_URL: url, LOG_LEVEL: 'silent', ...redis };
  before(async () => {
    const database = openDatabase(url);
    try {
      await database.schema.migrate();
    } finally {
      await database.close();
    }
  });
  after(cleanup);

  it('runs the worker alone: it sends what API instances with WORKER=off accepted', async () => {
    const api = await startApp({ env: { DATABASE_URL: url, WORKER: 'off', ...redis } });
    const worker = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'worker'], {
      env: { ...process.env, ...env, ...redis, LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    worker.stdout.on('data', (chunk) => {
      out += String(chunk);
    });
    try {
      const tenant = await newTenant(api.app);
      const res = await as(api.app, tenant, {
        method: 'POST',
        url: '/messages',
        payload: { message: 'from the API, sent by the worker' },
      });
      assert.equal(res.statusCode, 202);
      const id = res.json().id;
      let status = 'queued';
      for (let i = 0; i < 300 && status !== 'sent'; i++) {
        await new Promise((r) => setTimeout(r, 50));
        status = (await as(api.app, tenant, { method: 'GET', url: `/messages/${id}` })).json()
          .status;
      }
      assert.equal(status, 'sent', out);
      // The log line travels through a pipe: it may land a moment after the row says sent.
      const logged = new RegExp(`"messageId":"${id}"`);
      for (let i = 0; i < 100 && !logged.test(out); i++) {
        await new Promise((r) => setTimeout(r, 20));
      }
      assert.match(out, logged);
      const exited = new Promise<number | null>((r) => worker.once('exit', (code) => r(code)));
      worker.kill('SIGTERM');
      assert.equal(await exited, 0);
    } finally {
      worker.kill('SIGKILL');
      await api.app.close();
    }
  });

  it('runs as a process with usage on --help and exit code 2 on a bad command', () => {
    const tsx = 'node_modules/.bin/tsx';
    const help = spawnSync(tsx, ['src/cli/main.ts', '--help'], {
      encoding: 'utf8',
      env: { ...process.env, ...env },
    });
    assert.equal(help.status, 0);
    assert.match(help.stdout, /Usage: animal-store/);
    const bad = spawnSync(tsx, ['src/cli/main.ts', 'nope'], {
      encoding: 'utf8',
      env: { ...process.env, ...env },
    });
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /Unknown command/);
  });
});
