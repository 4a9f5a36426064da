import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { sqliteDatabaseUrl } from '../helpers.js';

const ROOT = new URL('../..', import.meta.url).pathname;

describe('the CLI in a script', () => {
  it('pipes clean JSON with the README’s `npm run --silent cli -- … --json`', () => {
    const store = sqliteDatabaseUrl();
    try {
      const ran = spawnSync('npm', ['run', '--silent', 'cli', '--', 'migrate', '--json'], {
        cwd: ROOT,
        encoding: 'utf8',
        env: { ...process.env, DATABASE_URL: store.url },
        timeout: 60_000,
      });
      assert.equal(ran.status, 0, ran.stderr);
      assert.ok(JSON.parse(ran.stdout).applied.includes('0001_initial'), ran.stdout);
    } finally {
      store.cleanup();
    }
  });
});
