/**
 * The production layout on one machine, without Docker: a private PostgreSQL and Redis on
 * loopback ports, the migration run once by the CLI, and N instances of the compiled service
 * (`node dist/server.js`) with the environment docker-compose.yml gives them.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = new URL('../../', import.meta.url).pathname;

export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  server.close();
  await once(server, 'close');
  return port;
}

async function until(what: string, check: () => Promise<boolean> | boolean, ms = 30_000) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

function pgBin(): string {
  const base = '/usr/lib/postgresql';
  const version = existsSync(base)
    ? readdirSync(base).sort((a, b) => Number(b) - Number(a))[0]
    : undefined;
  if (!version) {
    throw new Error(
      'the cluster test needs PostgreSQL server binaries: apt-get install postgresql',
    );
  }
  return join(base, version, 'bin');
}

/** A PostgreSQL cluster of its own in a temporary directory; can be stopped and started again. */
export class Postgres {
  readonly url: string;
  private readonly dir: string;
  private readonly asRoot = process.getuid?.() === 0;

  private constructor(readonly port: number) {
    this.dir = mkdtempSync(join(tmpdir(), 'animal-store-pg-'));
    this.url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  }

  static async create(): Promise<Postgres> {
    const pg = new Postgres(await freePort());
    pg.prepare();
    pg.start();
    return pg;
  }

  /** initdb refuses to run as root: as root, the cluster belongs to the postgres user. */
  private run(command: string): void {
    if (this.asRoot) {
      execFileSync('su', ['postgres', '-s', '/bin/sh', '-c', command], { stdio: 'pipe' });
    } else {
      execFileSync('/bin/sh', ['-c', command], { stdio: 'pipe' });
    }
  }

  private prepare(): void {
    if (this.asRoot) {
      const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
      chownSync(this.dir, uid, 0);
      chmodSync(this.dir, 0o700);
    }
    this.run(`${pgBin()}/initdb -D '${this.dir}/data' --auth=trust -U postgres >/dev/null`);
  }

  start(): void {
    this.run(
      `${pgBin()}/pg_ctl -D '${this.dir}/data' -w -l '${this.dir}/log' ` +
        `-o "-c listen_addresses=127.0.0.1 -p ${this.port} -k '${this.dir}' -c max_connections=200" start >/dev/null`,
    );
  }

  stop(): void {
    this.run(`${pgBin()}/pg_ctl -D '${this.dir}/data' -m fast stop >/dev/null`);
  }

  destroy(): void {
    try {
      this.stop();
    } catch {
      // Already stopped.
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A Redis server of its own, nothing on disk; can be stopped and started again. */
export class Redis {
  private child: ChildProcess | undefined;

  private constructor(readonly port: number) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Started, unless `started: false` (a port reserved for a Redis that comes up later). */
  static async create({ started = true }: { started?: boolean } = {}): Promise<Redis> {
    const redis = new Redis(await freePort());
    if (started) await redis.start();
    return redis;
  }

  async start(): Promise<void> {
    const child = spawn(
      'redis-server',
      ['--bind', '127.0.0.1', '--port', String(this.port), '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    );
    child.on('error', () => {});
    this.child = child;
    await until('Redis', async () => {
      try {
        execFileSync('redis-cli', ['-p', String(this.port), 'ping'], { stdio: 'pipe' });
        return true;
      } catch {
        return false;
      }
    });
  }

  async destroy(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    child.kill('SIGTERM');
    await once(child, 'exit');
  }
}

/** What docker-compose.yml sets for every app instance (ports and addresses aside). */
export function instanceEnv(databaseUrl: string, redisUrl: string): Record<string, string> {
  return {
    APP_ENV: 'production',
    HOST: '127.0.0.1',
    DATABASE_URL: databaseUrl,
    DATABASE_POOL_SIZE: '10',
    REDIS_URL: redisUrl,
    PUBLIC_BASE_URL: 'http://127.0.0.1:8080/v1',
    MESSAGES_BASE_URL: 'http://127.0.0.1:8080',
    SESSION_SECRET: 'a cluster test session secret of 32+ chars',
    TRUST_PROXY: '1',
    MIGRATE_ON_START: 'false',
    METRICS: 'off',
    SHUTDOWN_TIMEOUT_SECONDS: '25',
    // Info: the log sink's "message sent" lines are how the test counts deliveries.
    LOG_LEVEL: 'info',
  };
}

/** The CLI (`animal-store …`) on the cluster's database. */
export function cli(env: Record<string, string>, ...args: string[]): string {
  try {
    return execFileSync(process.execPath, [join(ROOT, 'bin/animal-store.js'), ...args], {
      env: { ...process.env, ...env },
      encoding: 'utf8',
      stdio: 'pipe',
    });
  } catch (err) {
    const { stdout, stderr } = err as { stdout?: string; stderr?: string };
    throw new Error(`animal-store ${args.join(' ')} failed:\n${stdout ?? ''}${stderr ?? ''}`);
  }
}

/** Puts the account on an enterprise plan whose limits never bind (through the CLI). */
export function unlimited(env: Record<string, string>, email: string): void {
  cli(
    env,
    'accounts',
    'set-plan',
    '--email',
    email,
    '--plan',
    'enterprise',
    '--per-minute',
    '1000000',
    '--per-day',
    '100000000',
  );
}

/** A new key of the account's, made with the CLI (so no request is counted): its secret. */
export function cliKey(env: Record<string, string>, email: string): string {
  return cli(env, 'keys', 'create', '--email', email).trim().split('\n').pop() ?? '';
}

/** One app instance: the compiled service in a process of its own. */
export class Instance {
  log = '';
  readonly base: string;

  private constructor(
    readonly name: string,
    readonly port: number,
    readonly child: ChildProcess,
  ) {
    this.base = `http://127.0.0.1:${port}`;
    child.stdout?.on('data', (chunk) => {
      this.log += String(chunk);
    });
    child.stderr?.on('data', (chunk) => {
      this.log += String(chunk);
    });
  }

  /** Waits until it serves, or with `until: 'listening'` only until it listens (it may be
   * waiting for its dependencies). */
  static async start(
    name: string,
    env: Record<string, string>,
    { until: stage = 'serving' }: { until?: 'listening' | 'serving' } = {},
  ): Promise<Instance> {
    const port = await freePort();
    const child = spawn(process.execPath, [join(ROOT, 'dist/server.js')], {
      env: { ...process.env, ...env, PORT: String(port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const instance = new Instance(name, port, child);
    await until(`${name} to listen`, () => {
      if (child.exitCode !== null) throw new Error(`${name} exited:\n${instance.log}`);
      return instance.log.includes(
        stage === 'serving' ? 'ready: serving requests' : 'Server listening at',
      );
    });
    return instance;
  }

  get exited(): Promise<number | null> {
    if (this.child.exitCode !== null) return Promise.resolve(this.child.exitCode);
    return once(this.child, 'exit').then(([code]) => code as number | null);
  }

  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    if (this.child.exitCode === null) this.child.kill(signal);
  }
}

export { until };
