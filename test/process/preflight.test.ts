import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { supported } from '../../src/preflight.js';

const ROOT = new URL('../..', import.meta.url).pathname;
const { engines } = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8'));

describe('the Node.js preflight', () => {
  it('reads the supported lines from package.json', () => {
    assert.equal(supported(process.versions.node, engines.node), true, 'this test runs on one');
    for (const version of ['20.20.2', '22.11.9', '23.1.0', '25.0.0', '18.20.0']) {
      assert.equal(supported(version, engines.node), false, version);
    }
    for (const version of ['22.12.0', '22.20.1', '24.0.0', '24.22.3', '26.1.0']) {
      assert.equal(supported(version, engines.node), true, version);
    }
  });

  it('stops the server and the CLI on Node 20 with one sentence, before SQLite loads', () => {
    // Node 20 from the npm registry, as CI's other lines come (.ci/node-line).
    const bin = execFileSync(`${ROOT}.ci/node-line`, ['20'], { encoding: 'utf8' }).trim();
    for (const entry of ['src/server.ts', 'src/cli/main.ts']) {
      const ran = spawnSync(`${bin}/node`, ['--import', 'tsx', entry, 'migrate'], {
        cwd: ROOT,
        encoding: 'utf8',
        env: { ...process.env, DATABASE_URL: 'sqlite::memory:', LOG_LEVEL: 'silent', PORT: '0' },
        timeout: 60_000,
      });
      assert.equal(ran.status, 1, `${entry}: ${ran.stderr}`);
      assert.equal(ran.stdout, '');
      assert.match(
        ran.stderr,
        /^Animal Store API needs Node\.js 22\.12\+, 24 or 26 \(package\.json "engines"\); this is Node\.js 20\.\d+\.\d+\. .+\n$/,
      );
    }
  });
});
