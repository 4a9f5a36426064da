import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';

/**
 * The start-up mistakes of issue 22, each met by a real server process: the ones that stop it
 * print one plain line on stderr (no stack) and exit 1; the ones it waits out (the database or
 * Redis refusing connections: they may start after it) log a line that names the setting.
 */

const dir = mkdtempSync(join(tmpdir(), 'animal-store-startup-'));
const running: ChildProcess[] = [];
after(() => {
  for (const child of running) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the server until it exits (or `until` matches its output, then stops it). */
async function server(env: Record<string, string>, until?: RegExp): Promise<Run> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
    env: {
      ...process.env,
      PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_URL: 'sqlite::memory:',
      DEMO_ACCOUNT: 'false',
      LOG_LEVEL: 'info',
      REDIS_URL: '',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk) => {
    stdout += String(chunk);
    if (until?.test(stdout)) child.kill('SIGTERM');
  });
  child.stderr?.on('data', (chunk) => {
    stderr += String(chunk);
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const [code] = (await once(child, 'exit')) as [number | null];
  clearTimeout(timer);
  return { code, stdout, stderr };
}

/** Exited 1 with exactly one line on stderr, matching `pattern`, and no stack. */
function oneLine(run: Run, pattern: RegExp): void {
  assert.equal(run.code, 1, run.stderr + run.stdout);
  const lines = run.stderr.trim().split('\n');
  assert.equal(lines.length, 1, run.stderr);
  assert.match(lines[0] ?? '', pattern);
  assert.doesNotMatch(run.stderr + run.stdout, /\n\s+at /, 'no stack');
}

async function closedPort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  server.close();
  await once(server, 'close');
  return port;
}

describe('start-up failures, in one plain line', { concurrency: 4 }, () => {
  it('port in use', async () => {
    const taken = createServer();
    taken.listen(0, '127.0.0.1');
    await once(taken, 'listening');
    const { port } = taken.address() as AddressInfo;
    try {
      const run = await server({ PORT: String(port) });
      oneLine(run, new RegExp(`^Port ${port} is already in use on 127\\.0\\.0\\.1: .*PORT=`));
    } finally {
      taken.close();
    }
  });

  it('an address that is not this machine’s', async () => {
    // 192.0.2.1 is TEST-NET-1 (RFC 5737): never an address of this machine.
    const run = await server({ HOST: '192.0.2.1' });
    oneLine(run, /^HOST=192\.0\.2\.1 is not an address of this machine: use 127\.0\.0\.1/);
  });

  it('a host name that does not resolve', async () => {
    // .invalid never resolves (RFC 6761).
    const run = await server({ HOST: 'no-such-host.invalid' });
    oneLine(run, /^HOST=no-such-host\.invalid is not a known host name/);
  });

  it('a SQLite folder that cannot be created', async () => {
    const file = join(dir, 'a-file');
    writeFileSync(file, '');
    const run = await server({ DATABASE_URL: `sqlite:${join(file, 'data', 'store.db')}` });
    oneLine(run, /^Cannot create the folder of .*: part of its path is a file.*DATABASE_URL=/);
  });

  it('a file that is not a SQLite database', async () => {
    const file = join(dir, 'not-a-db.db');
    writeFileSync(file, 'just some text, long enough to be read as a header, and more of it');
    const run = await server({ DATABASE_URL: `sqlite:${file}` });
    oneLine(run, /is not a SQLite database of this service: point DATABASE_URL at another file/);
  });

  it('shows the stack as well at LOG_LEVEL=debug', async () => {
    const file = join(dir, 'another-file');
    writeFileSync(file, '');
    const run = await server({
      DATABASE_URL: `sqlite:${join(file, 'store.db')}`,
      LOG_LEVEL: 'debug',
    });
    assert.equal(run.code, 1);
    assert.match(run.stderr, /^Cannot create the folder/);
    assert.match(run.stderr, /\n\s+at /);
  });

  const pgUrl = process.env.TEST_DATABASE_URL;
  const pgServer = pgUrl ? new URL(pgUrl) : undefined;

  it('a PostgreSQL database that does not exist', { skip: !pgServer }, async () => {
    const url = new URL(pgServer as URL);
    url.pathname = '/animal_store_no_such_database';
    const run = await server({ DATABASE_URL: url.href });
    oneLine(
      run,
      /^PostgreSQL at .*: the database "animal_store_no_such_database" does not exist: create it .*DATABASE_URL/,
    );
  });

  it('a PostgreSQL user the server refuses', { skip: !pgServer }, async () => {
    const url = new URL(pgServer as URL);
    url.username = 'animal_store_no_such_user';
    url.password = 'wrong';
    const run = await server({ DATABASE_URL: url.href });
    // With password authentication: 28P01; with trust, the role does not exist: 28000.
    oneLine(
      run,
      /^PostgreSQL at .*: (password authentication failed for user|the server refused user) "animal_store_no_such_user".*DATABASE_URL/,
    );
  });

  it('PostgreSQL refusing connections is waited for, with a line naming DATABASE_URL', async () => {
    const port = await closedPort();
    const run = await server(
      { DATABASE_URL: `postgres://animal@127.0.0.1:${port}/animal_store` },
      /does not answer yet/,
    );
    assert.match(
      run.stdout,
      new RegExp(
        `PostgreSQL at 127\\.0\\.0\\.1:${port}/animal_store does not answer yet \\(connection refused: is it running, and does DATABASE_URL name it\\?\\)`,
      ),
    );
    assert.equal(run.code, 0, 'stopped by its SIGTERM, not by the failure');
    assert.doesNotMatch(run.stdout + run.stderr, /\n\s+at /);
  });

  it('Redis unreachable is waited for, with a line naming REDIS_URL', async () => {
    const port = await closedPort();
    const run = await server({ REDIS_URL: `redis://127.0.0.1:${port}` }, /does not answer yet/);
    assert.match(
      run.stdout,
      new RegExp(
        `Redis at 127\\.0\\.0\\.1:${port} does not answer yet \\(connection refused: is it running, and does REDIS_URL name it\\?\\)`,
      ),
    );
    assert.equal(run.code, 0);
    assert.doesNotMatch(run.stdout + run.stderr, /\n\s+at /);
  });
});
