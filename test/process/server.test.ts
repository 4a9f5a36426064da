import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';
import { after, describe, it } from 'node:test';
import { sql } from 'kysely';
import { openDatabase } from '../../src/store/database.js';
import { sqliteDatabaseUrl } from '../helpers.js';

function hasCurl(): boolean {
  try {
    execFileSync('curl', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * Everything the child writes to stdout, as it arrives. A listener, not an async iterator:
 * leaving an iterator destroys the stream, and the child's next write would find it closed.
 */
function follow(child: ChildProcess, stream: 'stdout' | 'stderr' = 'stdout'): () => string {
  let out = '';
  child[stream]?.on('data', (chunk) => {
    out += String(chunk);
  });
  return () => out;
}

describe('server process (real port)', () => {
  // A fresh SQLite store: the demo account is made on the first start of an empty store.
  const { url, cleanup } = sqliteDatabaseUrl();
  let child: ChildProcess | undefined;
  after(() => {
    child?.kill('SIGKILL');
    cleanup();
  });

  it('prints a demo key and a curl line that works as printed, then stops on SIGTERM', async () => {
    // One process (tsx's loader inside node), so a signal reaches the server itself.
    child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
      env: { ...process.env, PORT: '0', HOST: '127.0.0.1', DATABASE_URL: url, LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const stdout = follow(child);
    // The banner goes to stderr: stdout stays JSON lines, and the password out of the log.
    const log = follow(child, 'stderr');
    await waitForLog(log, /start again\.\n/);
    const out = log();
    assert.match(out, /keys create --email demo@animal-store\.local/);
    assert.match(out, /accounts reset-password --email demo@animal-store\.local/);
    for (const line of stdout().trim().split('\n')) JSON.parse(line);
    assert.doesNotMatch(stdout(), /password|as_test_/);
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

describe('server process: start and shutdown', () => {
  const children: ChildProcess[] = [];
  const cleanups: Array<() => void> = [];
  after(() => {
    for (const child of children) child.kill('SIGKILL');
    for (const cleanup of cleanups) cleanup();
  });

  /** The server on a fresh SQLite store, with its base URL once it listens. */
  async function start(env: Record<string, string> = {}) {
    const { url, cleanup } = sqliteDatabaseUrl();
    cleanups.push(cleanup);
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
      env: {
        ...process.env,
        PORT: '0',
        HOST: '127.0.0.1',
        DATABASE_URL: url,
        DEMO_ACCOUNT: 'false',
        // Debug: a line as each request arrives, which the tests below wait for.
        LOG_LEVEL: 'debug',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    const log = follow(child);
    await waitForLog(log, /ready: serving requests/);
    const base = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(log())?.[1] ?? '';
    return { child, base, url, log };
  }

  /**
   * A request whose body never finishes arriving: it stays in flight until the socket ends.
   * Returns once the server has logged it, so a signal cannot beat it to the server.
   */
  async function holdRequestOpen(base: string, log: () => string): Promise<Socket> {
    const { hostname, port } = new URL(base);
    const socket = connect(Number(port), hostname);
    await once(socket, 'connect');
    socket.write(
      'POST /v1/accounts HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' +
        'Content-Length: 100\r\n\r\n{"email":',
    );
    socket.on('error', () => {});
    await waitForLog(log, /"url":"\/v1\/accounts"/);
    return socket;
  }

  it('answers a request in flight at SIGTERM, then exits 0', async () => {
    const { child, base, log } = await start();
    const email = `inflight-${Date.now()}@example.com`;
    const pending = fetch(`${base}/v1/accounts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password: 'long enough password' }),
    });
    // Once the server has logged the request, scrypt keeps it busy for tens of milliseconds:
    // the signal lands mid-request.
    await waitForLog(log, /"url":"\/v1\/accounts"/);
    child.kill('SIGTERM');
    const res = await pending;
    assert.equal(res.status, 201);
    const [code] = await once(child, 'exit');
    assert.equal(code, 0);
    assert.match(log(), /shutting down/);
    await assert.rejects(fetch(`${base}/healthz`), 'no longer listening');
    // One line for the request at info, with what an operator filters on; then each phase of
    // the shutdown.
    const lines = log()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const answered = lines.filter((line) => line.level === 30 && line.route === '/v1/accounts');
    assert.equal(answered.length, 1, JSON.stringify(answered));
    const [line] = answered;
    assert.equal(line?.method, 'POST');
    assert.equal(line?.status, 201);
    assert.equal(typeof line?.ms, 'number');
    assert.equal(typeof line?.reqId, 'string');
    assert.equal(line?.msg, 'POST /v1/accounts 201');
    const phases = lines.map((l) => String(l.msg));
    const order = ['shutting down', 'requests answered', 'database closed'].map((phase) =>
      phases.findIndex((msg) => msg.includes(phase)),
    );
    assert.ok(
      order.every((i, n) => i >= 0 && (n === 0 || i > (order[n - 1] ?? 0))),
      `${order}`,
    );
    assert.equal(phases.filter((msg) => msg.startsWith('Server listening')).length, 1);
  });

  it('exits 1 when the shutdown outlasts SHUTDOWN_TIMEOUT_SECONDS', async () => {
    const { child, base, log } = await start({ SHUTDOWN_TIMEOUT_SECONDS: '1' });
    const socket = await holdRequestOpen(base, log);
    const startedAt = Date.now();
    child.kill('SIGTERM');
    const [code] = await once(child, 'exit');
    socket.destroy();
    assert.equal(code, 1);
    const took = Date.now() - startedAt;
    assert.ok(took >= 900 && took < 10_000, `${took} ms`);
    assert.match(log(), /shutdown deadline passed/);
  });

  it('exits at once on a second signal', async () => {
    const { child, base, log } = await start({ SHUTDOWN_TIMEOUT_SECONDS: '60' });
    const socket = await holdRequestOpen(base, log);
    child.kill('SIGTERM');
    await waitForLog(log, /shutting down/);
    const startedAt = Date.now();
    child.kill('SIGINT');
    const [code] = await once(child, 'exit');
    socket.destroy();
    assert.equal(code, 1);
    assert.ok(Date.now() - startedAt < 5_000);
    assert.match(log(), /second signal/);
  });

  it('refuses to start on a schema newer than the code, or one it may not migrate', async () => {
    const { url, cleanup } = sqliteDatabaseUrl();
    cleanups.push(cleanup);
    const run = (env: Record<string, string>) =>
      spawnSync(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
        env: { ...process.env, PORT: '0', DATABASE_URL: url, DEMO_ACCOUNT: 'false', ...env },
        encoding: 'utf8',
        timeout: 30_000,
      });
    const unmigrated = run({ MIGRATE_ON_START: 'false' });
    assert.equal(unmigrated.status, 1);
    assert.match(unmigrated.stderr, /animal-store migrate/);

    const database = openDatabase(url);
    await database.schema.migrate();
    await database.write((tx) =>
      sql`insert into kysely_migration (name, timestamp) values ('9999_future', '2030-01-01')`.execute(
        tx,
      ),
    );
    await database.close();
    const newer = run({});
    assert.equal(newer.status, 1);
    assert.match(newer.stderr, /newer than this version of the code.*9999_future/s);
  });

  it('says in one line, without a stack, that its port is taken', async () => {
    const { url, cleanup } = sqliteDatabaseUrl();
    cleanups.push(cleanup);
    const taken = createServer();
    taken.listen(0, '127.0.0.1');
    await once(taken, 'listening');
    const { port } = taken.address() as AddressInfo;
    try {
      const run = spawnSync(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
        env: { ...process.env, PORT: String(port), DATABASE_URL: url, DEMO_ACCOUNT: 'false' },
        encoding: 'utf8',
        timeout: 30_000,
      });
      assert.equal(run.status, 1);
      assert.equal(
        run.stderr.trim(),
        `Port ${port} is already in use on 127.0.0.1: stop what listens there, or start with PORT=<another port>.`,
      );
    } finally {
      taken.close();
    }
  });
});

/** Waits (up to 30 s: a start compiles TypeScript) until the log shows `pattern`. */
async function waitForLog(log: () => string, pattern: RegExp): Promise<void> {
  for (let i = 0; i < 1_200 && !pattern.test(log()); i++) {
    await new Promise((r) => setTimeout(r, 25));
  }
  assert.match(log(), pattern);
}
