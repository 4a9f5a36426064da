/**
 * The compiled service as the benchmarks start it: its environment, its readiness, and the
 * CPU time it (or any process) uses.
 */
import type { ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/**
 * The environment of a service under benchmark on 127.0.0.1:`port`: production, logging
 * warnings only, no metrics, no Redis (embedded) unless `more` sets one.
 */
export function serviceEnv(
  port: number,
  databaseUrl: string,
  more: Record<string, string> = {},
): NodeJS.ProcessEnv {
  const base = `http://127.0.0.1:${port}`;
  return {
    ...process.env,
    APP_ENV: 'production',
    PORT: String(port),
    HOST: '127.0.0.1',
    DATABASE_URL: databaseUrl,
    // Embedded means no Redis, whatever the shell running the benchmark has set.
    REDIS_URL: '',
    PUBLIC_BASE_URL: `${base}/v1`,
    MESSAGES_BASE_URL: base,
    SESSION_SECRET: 'a benchmark session secret of 32+ characters',
    LOG_LEVEL: 'warn',
    METRICS: 'off',
    ...more,
  };
}

/** Resolves once the service at `base` answers /readyz; fails if it exits or takes `waitMs`
 * (30 s; a service under valgrind takes minutes). */
export async function untilReady(
  child: ChildProcess,
  base: string,
  waitMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the service at ${base} exited at start`);
    const ready = await fetch(`${base}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) return;
    if (Date.now() > deadline) throw new Error(`the service at ${base} did not start`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** An instance as bench/ab.ts and bench/instructions.ts take it: `NAME=DIR[,VAR=VALUE...]`,
 * a compiled service's folder and the settings it runs with. */
export function instanceSpec(spec: string): {
  name: string;
  build: string;
  env: Record<string, string>;
} {
  const name = spec.slice(0, spec.indexOf('='));
  const [build = 'dist', ...settings] = spec.slice(spec.indexOf('=') + 1).split(',');
  const env = Object.fromEntries(
    settings.map((setting) => [
      setting.slice(0, setting.indexOf('=')),
      setting.slice(setting.indexOf('=') + 1),
    ]),
  );
  return { name, build, env };
}

/** The CPU time (ms, user and system) of a `/proc` stat file; 0 for a process gone. */
function statCpuMs(file: string): number {
  try {
    const stat = readFileSync(file, 'utf8');
    // After the command's closing parenthesis, from field 3: utime and stime are 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10; // USER_HZ is 100 on Linux
  } catch {
    // Gone: a PostgreSQL backend whose connection closed.
    return 0;
  }
}

/** CPU time (ms, user and system) the processes have used so far; 0 for one gone. */
export function cpuMs(pids: readonly number[]): number {
  let ms = 0;
  for (const pid of pids) ms += statCpuMs(`/proc/${pid}/stat`);
  return ms;
}

/**
 * CPU time (ms) the processes use from now on: the result reads it so far. A process gone by
 * then adds nothing (what it used before going can no longer be read), instead of taking its
 * whole life's time off the sum, as two readings of `cpuMs` would: a PostgreSQL backend closed
 * during a run (the service's pool closes idle ones after 30 s).
 */
export function cpuFrom(pids: readonly number[]): () => number {
  const before = pids.map((pid) => statCpuMs(`/proc/${pid}/stat`));
  return () =>
    pids.reduce((sum, pid, i) => {
      const now = statCpuMs(`/proc/${pid}/stat`);
      return now === 0 ? sum : sum + now - (before[i] ?? 0);
    }, 0);
}

/** The processes of PostgreSQL (its backends) and Redis: where a shared request's work goes too. */
export function storePids(): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        return /^(postgres|redis-server)$/.test(readFileSync(`/proc/${pid}/comm`, 'utf8').trim());
      } catch {
        return false;
      }
    })
    .map(Number);
}

/**
 * CPU time (ms) each of a process's live threads has used so far, by thread id, with its name
 * (`MainThread`, `V8Worker` for the garbage collector's helpers, `WorkerThread`,
 * `libuv-worker`…).
 */
export function threadCpuMs(pid: number): Map<string, { name: string; ms: number }> {
  const threads = new Map<string, { name: string; ms: number }>();
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return threads;
  }
  for (const task of tasks) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${task}/comm`, 'utf8').trim();
      threads.set(task, { name, ms: statCpuMs(`/proc/${pid}/task/${task}/stat`) });
    } catch {
      // Ended between the listing and the read: counted with the threads that ended.
    }
  }
  return threads;
}

/** A request as the benchmarks send it: a path on the service, and what goes with it. */
export interface BenchRequest {
  path: string;
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
}

/** An account's first page of pets: the GET every tool measures. */
export function firstPage(key: string): BenchRequest {
  return { path: '/v1/pets?limit=20', method: 'GET', headers: { authorization: `Bearer ${key}` } };
}

/** A new pet in an account's category: the POST every tool measures. */
export function newPet(key: string, categoryId: number): BenchRequest {
  return {
    path: '/v1/pets',
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Bench', categoryId }),
  };
}

/** A request as a load sends it: its URL on the service at `base`. */
export function sentTo(base: string, { path, ...request }: BenchRequest) {
  return { url: base + path, ...request };
}
