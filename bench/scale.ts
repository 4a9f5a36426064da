/**
 * Capacity figures (issue 53): the service on a store holding many tenants' data against the
 * same service on an empty store of the same kind, side by side in one run
 * (`npm run bench:scale`; not a test). For each store (SQLite; PostgreSQL too when
 * BENCH_DATABASE_URL or TEST_DATABASE_URL names a server, with Redis, as the shared mode runs,
 * when BENCH_REDIS_URL or TEST_REDIS_URL is set), two stores are made: an empty one (the two
 * measured accounts alone: 10,000 pets, 1,000 request-log entries) and the seeded one
 * (bench/scale-seed.ts). Then, for each: its disk; the compiled server's start-up (process
 * start to the first `/readyz` 200); p50 and p99 of `--requests` requests, `--concurrency` at
 * a time, for the measured account's first page of pets, its deep pages, the log account's
 * first page of requests, and POST /v1/pets; the server's RSS after them; housekeeping's full
 * pass, in-process. Prints a Markdown table and writes every figure as JSON.
 *
 * As decision 0062 has it for figures compared on this VM: both servers run at once, on the
 * servers' core, and each round runs every figure on one store right after the other, in the
 * other order in the next round; a figure is the median of its rounds', and a ratio the median
 * of the rounds' ratios. Start-ups and housekeeping's passes alternate the same way.
 *
 * The first page is one URL, sent again and again: after its first read it is answered from
 * the page cache (as a client polling it is). Each deep page is another cursor, in the
 * account's last tenth (or its last `--rounds` × `--requests` pets, on a smaller account), so
 * that no deep page is answered from the cache: each is read from the store.
 *
 * Usage: npm run bench:scale -- [--store sqlite|postgres|both] [--pets 1000000]
 *   [--accounts 1000] [--measured PETS] (a tenth of --pets) [--log-accounts 100]
 *   [--log-entries 10000] [--segment 20] [--rounds 9] [--requests 800] [--concurrency 4]
 *   [--starts 3] [--out /tmp/animal-store-bench-scale.json]
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import SqliteDatabase from 'better-sqlite3';
import pg from 'pg';
import { freePort } from '../test/cluster/harness.js';
import { freshPostgres } from '../test/helpers.js';
import { pinned, serverCommand } from './load.js';
import { petsPerAccount, type Seeded, type Shape, seedScale } from './scale-seed.js';
import { type BenchRequest, firstPage, newPet, serviceEnv } from './service.js';
import { median as medianOf } from './stats.js';
import { type Timed, timed } from './timed.js';

const dist = (path: string) => new URL(`../dist/${path}`, import.meta.url).href;
const { buildApp } = (await import(dist('app.js'))) as typeof import('../src/app.js');
const { loadConfig } = (await import(dist('config.js'))) as typeof import('../src/config.js');
const { encodeCursor } = (await import(
  dist('domain/pagination.js')
)) as typeof import('../src/domain/pagination.js');

const ROOT = new URL('../', import.meta.url).pathname;
const PG_URL = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL;
const REDIS_URL = process.env.BENCH_REDIS_URL ?? process.env.TEST_REDIS_URL;

const { values: args } = parseArgs({
  options: {
    store: { type: 'string', default: PG_URL ? 'both' : 'sqlite' },
    pets: { type: 'string', default: '1000000' },
    accounts: { type: 'string', default: '1000' },
    measured: { type: 'string' },
    'log-accounts': { type: 'string', default: '100' },
    'log-entries': { type: 'string', default: '10000' },
    segment: { type: 'string', default: '20' },
    rounds: { type: 'string', default: '9' },
    requests: { type: 'string', default: '800' },
    starts: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '4' },
    out: { type: 'string', default: join(tmpdir(), 'animal-store-bench-scale.json') },
  },
});
const number = (name: keyof typeof args) => {
  const value = Number(args[name]);
  if (!Number.isInteger(value) || value < 0) throw new Error(`--${name} must be a whole number`);
  return value;
};
const PETS = number('pets');
const ACCOUNTS = Math.max(2, number('accounts'));
const MEASURED = args.measured === undefined ? Math.floor(PETS / 10) : number('measured');
const LOG_ACCOUNTS = Math.min(ACCOUNTS - 1, number('log-accounts'));
const LOG_ENTRIES = number('log-entries');
const SEGMENT = Math.max(1, number('segment'));
const ROUNDS = Math.max(1, number('rounds'));
const REQUESTS = Math.max(1, number('requests'));
/** Requests of each figure on a store, in all its rounds. */
const MEASURED_REQUESTS = ROUNDS * REQUESTS;
/** Starts of the server on each store, and housekeeping's passes, alternated. */
const STARTS = Math.max(1, number('starts'));
const CONCURRENCY = Math.max(1, number('concurrency'));
const STORES = { sqlite: ['sqlite'], postgres: ['postgres'], both: ['sqlite', 'postgres'] }[
  args.store ?? ''
] as Array<'sqlite' | 'postgres'> | undefined;
if (!STORES) throw new Error('--store must be sqlite, postgres or both');
if (STORES.includes('postgres') && !PG_URL) {
  throw new Error('PostgreSQL needs BENCH_DATABASE_URL or TEST_DATABASE_URL');
}

/** The empty store: the measured accounts alone, with what their pages need. */
const EMPTY: Shape = {
  // More, should the rounds need more deep pages than 10,000 pets hold.
  pets: [Math.max(10_000, MEASURED_REQUESTS + 1_000), 0],
  logAccounts: 1,
  logEntries: 1_000,
  segment: SEGMENT,
};
const SEEDED: Shape = {
  pets: petsPerAccount(ACCOUNTS, PETS, MEASURED),
  logAccounts: LOG_ACCOUNTS,
  logEntries: LOG_ENTRIES,
  segment: SEGMENT,
};
/** Requests each figure is warmed up with, unmeasured. */
const WARMUP = Math.min(500, REQUESTS);

const mb = (bytes: number) => bytes / 1024 / 1024;

/** What a store takes on disk: in all, its pets (with their indexes), its request log. */
interface Disk {
  bytes: number;
  petsBytes: number;
  logBytes: number;
}

/** The runs of a figure on one store: one a round. */
interface Figure {
  rounds: Timed[];
  /** The medians of the rounds'. */
  p50Ms: number;
  p99Ms: number;
}

const FIGURES = ['firstPage', 'deepPage', 'requestsPage', 'post'] as const;
type FigureName = (typeof FIGURES)[number];

/** One store's figures. */
interface Side {
  data: 'empty' | 'seeded';
  accounts: number;
  pets: number;
  logEntries: number;
  seedSeconds: Record<string, number>;
  disk: Disk;
  /** Each start's, and their median. */
  startupMs: number[];
  startupMedianMs: number;
  figures: Record<FigureName, Figure>;
  rssMb: number;
  /** Each pass's time, their median, and what the first deleted. */
  housekeepingMs: number[];
  housekeepingMedianMs: number;
  deleted: Record<string, number>;
}

/** The empty store and the seeded one of a kind, measured side by side. */
interface Compared {
  store: 'sqlite' | 'postgres';
  empty: Side;
  seeded: Side;
  /** The median of the rounds' ratios of the seeded store's p99 to the empty one's. */
  p99Ratios: Record<FigureName, number>;
}

/** A store of the kind, new and empty, and how to drop it. */
async function newStore(kind: 'sqlite' | 'postgres') {
  if (kind === 'postgres') {
    return freshPostgres(PG_URL as string, 'animal_store_scale');
  }
  const dir = mkdtempSync(join(tmpdir(), 'animal-store-scale-'));
  return {
    url: `sqlite:${join(dir, 'scale.db')}`,
    drop: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

/**
 * PostgreSQL after a bulk load, as autovacuum leaves it within minutes: its statistics taken,
 * its visibility map set (what index-only scans and the planner's estimates rely on).
 */
async function vacuum(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('VACUUM (ANALYZE)');
  } finally {
    await client.end();
  }
}

async function diskOf(url: string): Promise<Disk> {
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length);
    const size = (file: string) => (existsSync(file) ? statSync(file).size : 0);
    const sqlite = new SqliteDatabase(path, { readonly: true });
    try {
      const byTable = new Map(
        (
          sqlite
            .prepare(
              `select s.tbl_name as name, sum(d.pgsize) as bytes
               from dbstat d join sqlite_schema s on s.name = d.name group by s.tbl_name`,
            )
            .all() as Array<{ name: string; bytes: number }>
        ).map((row) => [row.name, row.bytes]),
      );
      return {
        bytes: size(path) + size(`${path}-wal`) + size(`${path}-shm`),
        petsBytes: byTable.get('pets') ?? 0,
        logBytes:
          (byTable.get('request_log_segments') ?? 0) + (byTable.get('request_log_hours') ?? 0),
      };
    } finally {
      sqlite.close();
    }
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ bytes: string; pets: string; log: string }>(
      `select pg_database_size(current_database()) as bytes,
         pg_total_relation_size('pets') as pets,
         pg_total_relation_size('request_log_segments')
           + pg_total_relation_size('request_log_hours') as log`,
    );
    const row = rows[0];
    return { bytes: Number(row?.bytes), petsBytes: Number(row?.pets), logBytes: Number(row?.log) };
  } finally {
    await client.end();
  }
}

function rssMb(pid: number | undefined): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Math.round(Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024);
}

/** The compiled server on the store, and how long it took to answer `/readyz` 200. */
async function startServer(url: string, kind: 'sqlite' | 'postgres') {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const [command, argv] = serverCommand([join(ROOT, 'dist/server.js')]);
  const started = performance.now();
  const child = spawn(command, argv, {
    env: serviceEnv(port, url, {
      ...(kind === 'postgres' &&
        REDIS_URL && { REDIS_URL, REDIS_KEY_PREFIX: `bench-scale-${randomUUID()}:` }),
    }),
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the server on ${url} exited at start`);
    const ready = await fetch(`${base}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) break;
    if (Date.now() > deadline) throw new Error(`the server on ${url} did not start`);
    await new Promise((r) => setTimeout(r, 10));
  }
  return { child, base, startupMs: performance.now() - started };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  await exited;
}

/** `count` cursors of pets in `from`–`to` (ids), each once while there are enough, shuffled. */
function cursors(from: number, to: number, count: number): string[] {
  const ids = Array.from({ length: Math.max(1, to - from + 1) }, (_, i) => from + i);
  for (let i = ids.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [ids[i], ids[j]] = [ids[j] as number, ids[i] as number];
  }
  return Array.from({ length: count }, (_, i) => encodeCursor(ids[i % ids.length] as number));
}

/** Housekeeping's full pass over the store, in-process, as a running instance's worker runs it. */
async function housekeepingPass(url: string) {
  const app = await buildApp({
    config: loadConfig(serviceEnv(0, url, { WORKER: 'off' })),
  });
  try {
    await app.ready();
    // The writer's connection opened first, as a running instance's is: on PostgreSQL the
    // connection alone took longer than the pass.
    await app.database.write(async () => undefined);
    const started = performance.now();
    const deleted = await app.housekeeping.runOnce();
    return { ms: performance.now() - started, deleted };
  } finally {
    await app.close();
  }
}

/** The requests of each figure on a seeded store, and their warm-ups. */
function loads(seeded: Seeded) {
  const auth = { authorization: `Bearer ${seeded.pets.key}` };
  const { first, last } = seeded.pets;
  // Full pages after each cursor: in the account's last tenth, or its last REQUESTS × ROUNDS
  // pets, so that no cursor is sent twice while the account has that many.
  const to = Math.max(first, last - 20);
  const from = Math.max(
    first,
    to - Math.max(Math.floor((last - first) / 10), MEASURED_REQUESTS) + 1,
  );
  const deep = (cursor: string): BenchRequest => ({
    path: `/v1/pets?limit=20&cursor=${cursor}`,
    method: 'GET',
    headers: auth,
  });
  const requestsPage: BenchRequest = {
    path: '/v1/requests?limit=20',
    method: 'GET',
    headers: { authorization: `Bearer ${seeded.log.key}` },
  };
  const post = newPet(seeded.pets.key, seeded.pets.categoryId);
  const times = (request: BenchRequest, count: number) =>
    Array.from({ length: count }, () => request);
  const deepPages = cursors(from, to, MEASURED_REQUESTS).map(deep);
  const measured: Record<FigureName, (round: number) => BenchRequest[]> = {
    firstPage: () => times(firstPage(seeded.pets.key), REQUESTS),
    deepPage: (round) => deepPages.slice(round * REQUESTS, (round + 1) * REQUESTS),
    requestsPage: () => times(requestsPage, REQUESTS),
    post: () => times(post, REQUESTS),
  };
  // The server's code compiled and its connections open; deep pages before the measured ones'
  // cursors, so those stay unread.
  const warmup = [
    times(firstPage(seeded.pets.key), WARMUP),
    cursors(first, Math.max(first, from - 1), WARMUP).map(deep),
    times(requestsPage, WARMUP),
    times(post, Math.min(100, WARMUP)),
  ];
  return { measured, warmup };
}

const median = (values: readonly number[]) => medianOf(values);

/** A store made for a comparison: what it holds and the loads made for it. */
interface Prepared extends ReturnType<typeof loads> {
  data: 'empty' | 'seeded';
  url: string;
  seeded: Seeded;
  disk: Disk;
}

async function compare(kind: 'sqlite' | 'postgres'): Promise<Compared> {
  const say = (data: string, line: string) => process.stdout.write(`[${kind}, ${data}] ${line}\n`);
  const drops: Array<() => Promise<void>> = [];
  try {
    const stores: Prepared[] = [];
    for (const [data, shape] of [
      ['empty', EMPTY],
      ['seeded', SEEDED],
    ] as const) {
      const store = await newStore(kind);
      drops.push(store.drop);
      const seeded = await seedScale(store.url, shape, (line) => say(data, line));
      if (kind === 'postgres') await vacuum(store.url);
      const disk = await diskOf(store.url);
      say(data, `store ${mb(disk.bytes).toFixed(0)} MB`);
      stores.push({ data, url: store.url, seeded, disk, ...loads(seeded) });
    }
    const [empty, seeded] = stores as [Prepared, Prepared];
    /** The two, in the round's order: mirrored from one round to the next. */
    const inOrder = <T>(round: number, pair: readonly [T, T]): T[] =>
      round % 2 === 0 ? [...pair] : [pair[1], pair[0]];

    const startups: [number[], number[]] = [[], []];
    for (let round = 0; round < STARTS; round++) {
      for (const index of inOrder(round, [0, 1] as const)) {
        const store = stores[index] as Prepared;
        const server = await startServer(store.url, kind);
        await stop(server.child);
        startups[index].push(server.startupMs);
      }
    }
    say('both', `started in ${startups.map((ms) => median(ms).toFixed(0)).join(' and ')} ms`);

    const servers = [await startServer(empty.url, kind), await startServer(seeded.url, kind)];
    const runs: Array<Record<FigureName, Timed[]>> = [0, 1].map(() => ({
      firstPage: [],
      deepPage: [],
      requestsPage: [],
      post: [],
    }));
    let rss: number[];
    try {
      for (const [index, store] of stores.entries()) {
        for (const requests of store.warmup) {
          await timed((servers[index] as { base: string }).base, requests, CONCURRENCY);
        }
      }
      for (let round = 0; round < ROUNDS; round++) {
        for (const figure of FIGURES) {
          for (const index of inOrder(round, [0, 1] as const)) {
            const store = stores[index] as Prepared;
            const server = servers[index] as { base: string };
            const result = await timed(server.base, store.measured[figure](round), CONCURRENCY);
            if (result.errors > 0) {
              say(store.data, `${figure}: ${result.errors} errors (${result.firstError})`);
            }
            runs[index]?.[figure].push(result);
          }
        }
        say(
          'both',
          `round ${round + 1}: p99 ${FIGURES.map(
            (figure) =>
              `${figure} ${runs.map((r) => r[figure].at(-1)?.p99Ms.toFixed(2)).join('/')}`,
          ).join(', ')} ms`,
        );
      }
      rss = servers.map((server) => rssMb(server.child.pid));
    } finally {
      await Promise.all(servers.map((server) => stop(server.child)));
    }

    const passes: [number[], number[]] = [[], []];
    const deleted: Array<Record<string, number>> = [];
    for (let round = 0; round < STARTS; round++) {
      for (const index of inOrder(round, [0, 1] as const)) {
        const pass = await housekeepingPass((stores[index] as Prepared).url);
        passes[index].push(pass.ms);
        deleted[index] ??= pass.deleted;
      }
    }
    say('both', `housekeeping ${passes.map((ms) => median(ms).toFixed(0)).join(' and ')} ms`);

    const side = (index: 0 | 1): Side => {
      const store = stores[index] as Prepared;
      const figures = Object.fromEntries(
        FIGURES.map((figure) => {
          const rounds = runs[index]?.[figure] ?? [];
          return [
            figure,
            {
              rounds,
              p50Ms: median(rounds.map((r) => r.p50Ms)),
              p99Ms: median(rounds.map((r) => r.p99Ms)),
            },
          ];
        }),
      ) as Record<FigureName, Figure>;
      return {
        data: store.data,
        accounts: store.seeded.accounts,
        pets: store.seeded.totalPets,
        logEntries: store.seeded.logEntries,
        seedSeconds: store.seeded.seconds,
        disk: store.disk,
        startupMs: startups[index],
        startupMedianMs: median(startups[index]),
        figures,
        rssMb: rss[index] ?? Number.NaN,
        housekeepingMs: passes[index],
        housekeepingMedianMs: median(passes[index]),
        deleted: deleted[index] ?? {},
      };
    };
    const p99Ratios = Object.fromEntries(
      FIGURES.map((figure) => {
        const [emptyRuns, seededRuns] = [runs[0]?.[figure] ?? [], runs[1]?.[figure] ?? []];
        return [
          figure,
          median(seededRuns.map((r, i) => r.p99Ms / (emptyRuns[i]?.p99Ms ?? Number.NaN))),
        ];
      }),
    ) as Record<FigureName, number>;
    return { store: kind, empty: side(0), seeded: side(1), p99Ratios };
  } finally {
    for (const drop of drops) await drop();
  }
}

// The measuring client on the load's cores, the server on its own (bench/load.ts).
if (pinned) execFileSync('taskset', ['-a', '-p', '-c', pinned.load, String(process.pid)]);
process.stdout.write(
  `seeded: ${ACCOUNTS.toLocaleString('en')} accounts, ${PETS.toLocaleString('en')} pets ` +
    `(${MEASURED.toLocaleString('en')} in the measured account), ` +
    `${LOG_ACCOUNTS.toLocaleString('en')} × ${LOG_ENTRIES.toLocaleString('en')} log entries; ` +
    `${REQUESTS.toLocaleString('en')} requests a figure, ${CONCURRENCY} at a time\n`,
);
// The machine's load average around the run: what else ran beside it moves every figure.
const loadBefore = loadavg();
const results: Compared[] = [];
for (const kind of STORES) results.push(await compare(kind));
const loadAfter = loadavg();

const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en', { maximumFractionDigits: digits, minimumFractionDigits: digits });
/** A row: its label, its value on a store, its digits, and its ratio's, when it has one. */
const rows: Array<[string, (side: Side) => number, number, ((c: Compared) => number)?]> = [
  ['GET /v1/pets first page p50 (ms)', (s) => s.figures.firstPage.p50Ms, 2],
  [
    'GET /v1/pets first page p99 (ms)',
    (s) => s.figures.firstPage.p99Ms,
    2,
    (c) => c.p99Ratios.firstPage,
  ],
  ['GET /v1/pets deep page p50 (ms)', (s) => s.figures.deepPage.p50Ms, 2],
  [
    'GET /v1/pets deep page p99 (ms)',
    (s) => s.figures.deepPage.p99Ms,
    2,
    (c) => c.p99Ratios.deepPage,
  ],
  ['GET /v1/requests first page p50 (ms)', (s) => s.figures.requestsPage.p50Ms, 2],
  [
    'GET /v1/requests first page p99 (ms)',
    (s) => s.figures.requestsPage.p99Ms,
    2,
    (c) => c.p99Ratios.requestsPage,
  ],
  ['POST /v1/pets p50 (ms)', (s) => s.figures.post.p50Ms, 2],
  ['POST /v1/pets p99 (ms)', (s) => s.figures.post.p99Ms, 2, (c) => c.p99Ratios.post],
  ['housekeeping, one pass (ms)', (s) => s.housekeepingMedianMs, 0],
  ['start-up to /readyz (ms)', (s) => s.startupMedianMs, 0],
  ['server RSS after the load (MB)', (s) => s.rssMb, 0],
  ['store on disk (MB)', (s) => mb(s.disk.bytes), 0],
  ['pets, with their indexes (MB)', (s) => mb(s.disk.petsBytes), 0],
  ['request log (MB)', (s) => mb(s.disk.logBytes), 0],
];
const name = { sqlite: 'SQLite', postgres: 'PostgreSQL' } as const;
const header = ['figure'];
for (const { store } of results) header.push(`${name[store]} empty`, `${name[store]} seeded`, '×');
const lines = [
  `| ${header.join(' | ')} |`,
  `|---|${header
    .slice(1)
    .map(() => '---:')
    .join('|')}|`,
];
for (const [label, value, digits, ratio] of rows) {
  const cells = [label];
  for (const compared of results) {
    const times = ratio ? ratio(compared) : value(compared.seeded) / value(compared.empty);
    cells.push(
      fmt(value(compared.empty), digits),
      fmt(value(compared.seeded), digits),
      fmt(times, 2),
    );
  }
  lines.push(`| ${cells.join(' | ')} |`);
}
const perMillion = (bytes: number, count: number) => fmt(mb(bytes) / (count / 1e6), 0);
const notes = results.map(
  ({ store, seeded }) =>
    `${name[store]}: ${perMillion(seeded.disk.bytes, seeded.pets)} MB of store a million pets ` +
    `(log included); pets ${perMillion(seeded.disk.petsBytes, seeded.pets)} MB a million; ` +
    `request log ${perMillion(seeded.disk.logBytes, seeded.logEntries)} MB a million entries; ` +
    `seeded in ${fmt(
      Object.values(seeded.seedSeconds).reduce((a, b) => a + b, 0),
      0,
    )} s`,
);
// Issue 53's goal: each page's p99 within 2 × the empty store's.
const checks = results.flatMap(({ store, p99Ratios }) =>
  (['firstPage', 'deepPage', 'requestsPage'] as const).map(
    (page) =>
      `${p99Ratios[page] <= 2 ? 'PASS' : 'MISS'} ${name[store]}: ${page} p99 ≤ 2 × the empty ` +
      `store's (${fmt(p99Ratios[page], 2)})`,
  ),
);
const errors = results.flatMap(({ store, empty, seeded }) =>
  [empty, seeded].flatMap((side) =>
    FIGURES.flatMap((figure) =>
      side.figures[figure].rounds.some((r) => r.errors > 0)
        ? [`${name[store]} ${side.data} ${figure}`]
        : [],
    ),
  ),
);
const load = (averages: number[]) => averages.map((n) => n.toFixed(2)).join(', ');
notes.push(`load average ${load(loadBefore)} before, ${load(loadAfter)} after`);
console.log(`\n${lines.join('\n')}\n\n${notes.join('\n')}\n`);
for (const line of checks) console.log(line);
if (errors.length > 0) console.log(`non-2xx answers in: ${errors.join(', ')}`);

writeFileSync(
  args.out as string,
  `${JSON.stringify(
    {
      date: new Date().toISOString(),
      machine: { cpus: cpus().length, model: cpus()[0]?.model, node: process.version },
      loadAverage: { before: loadBefore, after: loadAfter },
      pinned: pinned ?? null,
      scale: {
        accounts: ACCOUNTS,
        pets: PETS,
        measured: MEASURED,
        logAccounts: LOG_ACCOUNTS,
        logEntries: LOG_ENTRIES,
        segment: SEGMENT,
      },
      rounds: ROUNDS,
      requests: REQUESTS,
      concurrency: CONCURRENCY,
      results,
      checks,
    },
    null,
    2,
  )}\n`,
);
console.log(`\nWritten to ${args.out}`);
