/**
 * The sunset in a real process whose clock is past it: libfaketime preloaded into the server,
 * as the `faketime` command does (Debian's faketime package; the test is skipped without it).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, it } from 'node:test';
import { storeKey, testDatabaseUrl } from '../helpers.js';

/** libfaketime, as the `faketime` command preloads it (Debian's faketime package). */
function libfaketime(): string | undefined {
  const dirs = [
    '/usr/lib/x86_64-linux-gnu/faketime',
    '/usr/lib/aarch64-linux-gnu/faketime',
    '/usr/lib/faketime',
  ];
  return dirs.map((d) => `${d}/libfaketime.so.1`).find((f) => existsSync(f));
}

describe('a real process under faketime', {
  skip: !libfaketime() && 'faketime is not installed',
}, () => {
  it('answers 410 on GET /v1/pets/{id} after the sunset while GET /v1/pets?status=… works', async () => {
    const { url, cleanup } = testDatabaseUrl();
    const secret = await storeKey(url);
    // What `faketime '2030-12-06 00:00:00 UTC' …` does, with node as our direct child so it
    // can be stopped: preload libfaketime with a clock that starts there and runs on.
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
      env: {
        ...process.env,
        LD_PRELOAD: libfaketime(),
        FAKETIME: '@2030-12-06 00:00:00',
        TZ: 'UTC',
        PORT: '0',
        DATABASE_URL: url,
        DEMO_ACCOUNT: 'false',
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      let out = '';
      child.stdout.on('data', (chunk) => {
        out += String(chunk);
      });
      let base: string | undefined;
      for (let i = 0; i < 300 && !base; i++) {
        await new Promise((r) => setTimeout(r, 100));
        if (out.includes('ready: serving requests')) {
          base = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(out)?.[1];
        }
      }
      assert.ok(base, out);
      const headers = { authorization: `Bearer ${secret}` };
      const removed = await fetch(`${base}/v1/pets/1`, { headers });
      assert.equal(removed.status, 410);
      assert.equal(((await removed.json()) as { code: string }).code, 'endpoint_removed');
      const list = await fetch(`${base}/v1/pets?status=available`, { headers });
      assert.equal(list.status, 200);
    } finally {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
      cleanup();
    }
  });
});
