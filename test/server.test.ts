import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { after, describe, it } from 'node:test';
import { testDatabaseUrl } from './helpers.js';

function hasCurl(): boolean {
  try {
    execFileSync('curl', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Reads the child's stdout until `pattern` shows up. */
async function waitFor(child: ChildProcess, pattern: RegExp, timeoutMs = 30_000): Promise<string> {
  let out = '';
  const deadline = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  try {
    for await (const chunk of child.stdout ?? []) {
      out += String(chunk);
      if (pattern.test(out)) return out;
    }
    throw new Error(`server exited before printing ${pattern}:\n${out}`);
  } finally {
    clearTimeout(deadline);
  }
}

describe('server process (real port)', () => {
  // A fresh SQLite store: the demo account is made on the first start of an empty store.
  const saved = process.env.TEST_DATABASE_URL;
  delete process.env.TEST_DATABASE_URL;
  const { url, cleanup } = testDatabaseUrl();
  if (saved !== undefined) process.env.TEST_DATABASE_URL = saved;
  let child: ChildProcess | undefined;
  after(() => {
    child?.kill('SIGKILL');
    cleanup();
  });

  it('prints a demo key and a curl line that works as printed, then stops on SIGTERM', async () => {
    // One process (tsx's loader inside node), so a signal reaches the server itself.
    child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
      env: { ...process.env, PORT: '0', HOST: '127.0.0.1', DATABASE_URL: url, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const out = await waitFor(child, /API docs: \S+\n/);
    const curl = /^\s*(curl .+)$/m.exec(out)?.[1];
    assert.ok(curl, out);
    const [, key, address] =
      /Bearer (as_test_\w+)" (http:\/\/127\.0\.0\.1:\d+\/v1\/pets)$/.exec(curl) ?? [];
    assert.ok(key && address, curl);

    const res = await fetch(address, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(res.status, 200);
    const pets = (await res.json()) as Array<{ name: string }>;
    assert.ok(pets.length > 0);

    if (hasCurl()) {
      const body = execFileSync('sh', ['-c', `${curl} --silent --fail`], { encoding: 'utf8' });
      assert.deepEqual(JSON.parse(body), pets);
    }

    child.kill('SIGTERM');
    const [code] = await once(child, 'exit');
    assert.equal(code, 0);
  });
});
