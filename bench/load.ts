/**
 * One load run: wrk when it is installed (a C client leaves the CPU to the server), otherwise
 * autocannon in a child process. 50 connections, a warm-up, then a measured stretch.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';

export interface LoadSpec {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  /** Many tenants at once: each request from one picked at random (`url` gives the server). */
  mix?: Mix;
  /** A fresh `Idempotency-Key` on every request, as the SDK sends with every POST. */
  idempotencyKeys?: boolean;
  connections: number;
  seconds: number;
}

/** A tenant of a mixed load: its key, a category to add pets to, and its reads. */
export interface MixTenant {
  key: string;
  categoryId: number;
  /** Paths read, one picked at random per read (first pages, filters, deep pages). */
  reads: string[];
}

export interface Mix {
  tenants: MixTenant[];
  /** The share of requests that are `POST /v1/pets` (0.1: 90% reads, 10% writes). */
  writeShare: number;
}

export interface LoadResult {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** Answers other than 2xx (a benchmark with errors is not a benchmark); for the insert
   * baseline, failed inserts. */
  errors: number;
  /** What made the load: the insert baseline is a pg client loop. */
  tool: 'wrk' | 'autocannon' | 'pg';
}

function hasWrk(): boolean {
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' });
    return true;
  } catch (err) {
    // wrk --version exits 1 after printing its version.
    return (err as { status?: number }).status === 1;
  }
}

export const tool: 'wrk' | 'autocannon' = hasWrk() ? 'wrk' : 'autocannon';

/**
 * Cores for the servers under test and for the load generator, when the machine has two or
 * more and `taskset` (util-linux) is there: the servers on the last core, the load on the
 * others, so the scheduler never puts the two on one core or moves them mid-run (which, on a
 * 2-core VM, moved single figures by a quarter). BENCH_PIN=0 leaves placement to the kernel.
 * PostgreSQL and Redis are not pinned.
 */
function pinning(): { server: string; load: string } | undefined {
  if (process.env.BENCH_PIN === '0' || cpus().length < 2) return undefined;
  try {
    execFileSync('taskset', ['--version'], { stdio: 'ignore' });
  } catch {
    return undefined;
  }
  const last = cpus().length - 1;
  return { server: String(last), load: last === 1 ? '0' : `0-${last - 1}` };
}

export const pinned = pinning();

/** The command to start a server under test with: on the servers' core when pinned. */
export function serverCommand(args: string[]): [string, string[]] {
  return pinned
    ? ['taskset', ['-c', pinned.server, process.execPath, ...args]]
    : [process.execPath, args];
}

function run(command: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const [file, argv] = pinned
      ? ['taskset', ['-c', pinned.load, command, ...args]]
      : [command, args];
    const child = spawn(file, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += String(chunk);
    });
    child.stderr.on('data', (chunk) => {
      out += String(chunk);
    });
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`${command}: ${out}`)),
    );
  });
}

const luaDir = mkdtempSync(join(tmpdir(), 'animal-store-bench-'));
let luaCount = 0;

/** wrk's Lua for a mixed load: each request from a tenant picked at random, a write with the
 * mix's share, otherwise one of the tenant's reads. */
function mixLua(mix: Mix): string {
  const lua = (value: string) => JSON.stringify(value);
  const tenants = mix.tenants
    .map(
      (t) =>
        `{ auth = ${lua(`Bearer ${t.key}`)}, body = ${lua(JSON.stringify({ name: 'Mix', categoryId: t.categoryId }))}, reads = { ${t.reads.map(lua).join(', ')} } }`,
    )
    .join(',\n  ');
  return `local tenants = {
  ${tenants}
}
local writeShare = ${mix.writeShare}
request = function()
  local t = tenants[math.random(#tenants)]
  if math.random() < writeShare then
    return wrk.format("POST", "/v1/pets", { ["authorization"] = t.auth, ["content-type"] = "application/json" }, t.body)
  end
  return wrk.format("GET", t.reads[math.random(#t.reads)], { ["authorization"] = t.auth })
end
`;
}

/** wrk's Lua for a fresh Idempotency-Key per request, random and shaped as a UUIDv4 (what
 * most clients send: nothing in it sorts by time): wrk's headers, one more. */
const KEYED_LUA = `local r = math.random
math.randomseed(os.time() + os.clock() * 1e6)
request = function()
  local headers = {}
  for name, value in pairs(wrk.headers) do headers[name] = value end
  headers["idempotency-key"] = string.format("%04x%04x-%04x-4%03x-%04x-%04x%04x%04x",
    r(0, 65535), r(0, 65535), r(0, 65535), r(0, 4095), r(32768, 49151), r(0, 65535), r(0, 65535), r(0, 65535))
  return wrk.format(nil, nil, headers, nil)
end
`;

/** wrk's Lua: method, headers, body (or a mix), and a count of non-2xx answers printed at the
 * end. */
function wrkScript(spec: LoadSpec): string {
  const file = join(luaDir, `load-${luaCount++}.lua`);
  const headers = Object.entries(spec.headers ?? {})
    .map(([name, value]) => `wrk.headers[${JSON.stringify(name)}] = ${JSON.stringify(value)}`)
    .join('\n');
  writeFileSync(
    file,
    `wrk.method = ${JSON.stringify(spec.method ?? 'GET')}
${headers}
${spec.body !== undefined ? `wrk.body = ${JSON.stringify(spec.body)}` : ''}
${spec.mix ? mixLua(spec.mix) : ''}
${spec.idempotencyKeys ? KEYED_LUA : ''}
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) bad = 0 end
function response(status, headers, body) if status >= 300 then bad = bad + 1 end end
function done(summary, latency, requests)
  local total = 0
  for _, t in ipairs(threads) do total = total + t:get("bad") end
  io.write(string.format("bad %d\\n", total))
  io.write(string.format("p50 %f\\np99 %f\\n", latency:percentile(50) / 1000, latency:percentile(99) / 1000))
  io.write(string.format("rps %f\\n", summary.requests / (summary.duration / 1e6)))
end
`,
  );
  return file;
}

async function wrk(spec: LoadSpec): Promise<LoadResult> {
  const out = await run('wrk', [
    '-t1',
    `-c${spec.connections}`,
    `-d${spec.seconds}s`,
    '-s',
    wrkScript(spec),
    spec.url,
  ]);
  const read = (name: string) =>
    Number(new RegExp(`^${name} ([\\d.]+)$`, 'm').exec(out)?.[1] ?? NaN);
  return {
    requestsPerSecond: read('rps'),
    p50Ms: read('p50'),
    p99Ms: read('p99'),
    errors: read('bad') + Number(/Socket errors: .*?(\d+)/.exec(out)?.[1] ?? 0),
    tool: 'wrk',
  };
}

async function autocannon(spec: LoadSpec): Promise<LoadResult> {
  // In a child, so the client does not share the measuring process's event loop.
  const script = `
    const autocannon = (await import('autocannon')).default;
    const spec = JSON.parse(process.argv[1]);
    const pick = (items) => items[Math.floor(Math.random() * items.length)];
    // A mix: each request from a tenant picked at random, as wrk's mixed script does.
    const requests = spec.mix && [{ setupRequest: (request) => {
      const t = pick(spec.mix.tenants);
      const auth = { authorization: 'Bearer ' + t.key };
      return Math.random() < spec.mix.writeShare
        ? { ...request, method: 'POST', path: '/v1/pets',
            headers: { ...auth, 'content-type': 'application/json' },
            body: JSON.stringify({ name: 'Mix', categoryId: t.categoryId }) }
        : { ...request, method: 'GET', path: pick(t.reads), headers: auth, body: undefined };
    } }];
    const { randomUUID } = await import('node:crypto');
    const keyed = spec.idempotencyKeys && [{ setupRequest: (request) => ({ ...request,
      headers: { ...request.headers, 'idempotency-key': randomUUID() } }) }];
    const r = await autocannon({ url: spec.url, method: spec.method ?? 'GET', headers: spec.headers,
      body: spec.body, requests: requests || keyed || undefined, connections: spec.connections, duration: spec.seconds });
    process.stdout.write(JSON.stringify({ rps: r.requests.average, p50: r.latency.p50,
      p99: r.latency.p99, bad: r.non2xx + r.errors }));`;
  const out = await run(process.execPath, [
    '--input-type=module',
    '-e',
    script,
    JSON.stringify(spec),
  ]);
  const r = JSON.parse(out.slice(out.indexOf('{'))) as Record<string, number>;
  return {
    requestsPerSecond: r.rps ?? NaN,
    p50Ms: r.p50 ?? NaN,
    p99Ms: r.p99 ?? NaN,
    errors: r.bad ?? 0,
    tool: 'autocannon',
  };
}

export function load(spec: LoadSpec): Promise<LoadResult> {
  return tool === 'wrk' ? wrk(spec) : autocannon(spec);
}
