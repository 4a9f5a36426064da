/**
 * A private Redis stopped under a running app and started again: 503 (or, configured open,
 * requests through uncounted), recovery by itself, and the outage logged twice.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { freePort } from '../cluster/harness.js';
import { as, errorCode, newTenant, startApp, type TestApp } from '../helpers.js';

function hasRedisServer(): boolean {
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

describe('when Redis goes away', {
  skip: !hasRedisServer() && 'redis-server is not installed',
}, () => {
  let port: number;
  let server: ChildProcess | undefined;
  const startRedis = async () => {
    server = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      {
        stdio: 'ignore',
      },
    );
    for (let i = 0; i < 100; i++) {
      try {
        execFileSync('redis-cli', ['-p', String(port), 'ping'], { stdio: 'ignore' });
        return;
      } catch {
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    throw new Error('private redis-server did not start');
  };
  const stopRedis = async () => {
    const exited = new Promise((r) => server?.once('exit', r));
    server?.kill('SIGKILL');
    await exited;
  };
  before(async () => {
    port = await freePort();
    await startRedis();
  });
  after(() => server?.kill('SIGKILL'));

  it('fails closed with 503 by default, open when configured, and recovers by itself', async () => {
    let logged = '';
    const closed = await startApp({
      env: { REDIS_URL: `redis://127.0.0.1:${port}`, LOG_LEVEL: 'warn' },
      logStream: {
        write: (line: string) => {
          logged += line;
        },
      },
    });
    const open = await startApp({
      env: {
        REDIS_URL: `redis://127.0.0.1:${port}`,
        RATE_LIMIT_ON_STORE_ERROR: 'open',
        DATABASE_URL: closed.databaseUrl,
      },
    });
    try {
      const tenant = await newTenant(closed.app);
      const get = (app: TestApp) => as(app.app, tenant, { method: 'GET', url: '/v1/account' });
      assert.equal((await get(closed)).statusCode, 200);

      await stopRedis();
      const refused = await get(closed);
      assert.equal(refused.statusCode, 503);
      assert.equal(errorCode(refused), 'service_unavailable');
      assert.equal(refused.headers['retry-after'], '1');
      for (let i = 0; i < 20; i++) assert.equal((await get(closed)).statusCode, 503);
      const through = await get(open);
      assert.equal(through.statusCode, 200);
      assert.equal(through.headers['x-ratelimit-limit'], undefined);

      await startRedis();
      let status = 0;
      for (let i = 0; i < 60 && status !== 200; i++) {
        await new Promise((r) => setTimeout(r, 100));
        status = (await get(closed)).statusCode;
      }
      assert.equal(status, 200);
      // The outage is logged when it begins and when it ends, never per refused request.
      for (let i = 0; i < 50 && !/reachable again/.test(logged); i++) {
        await new Promise((r) => setTimeout(r, 100));
      }
      const lines = logged
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line).msg as string);
      assert.deepEqual(lines, [
        `Redis at 127.0.0.1:${port} is unreachable: requests that need it answer 503 until it is back`,
        `Redis at 127.0.0.1:${port} is reachable again`,
      ]);
    } finally {
      await open.close();
      await closed.close();
    }
  });
});
