/**
 * What one account's request log costs another (issue 51): an account whose log holds 10,000
 * entries with 4 KB bodies looks entries up by unknown ids from 4 API clients and 4 portal
 * sessions at once, while another account reads `GET /v1/pets?limit=1` over VICTIMS connections;
 * that account's latencies are read before and during the lookups. The looking account is on
 * the Free plan (as the was), or with `enterprise` on a plan no limit stops. The server
 * is the compiled dist/server.js in its own process, on a core of its own. PostgreSQL (and
 * Redis, with TEST_REDIS_URL) when TEST_DATABASE_URL is set.
 *
 * Usage: npm run bench:log-lookups -- [seconds] [free|enterprise] (defaults: 15, free);
 * ONLY=api or ONLY=portal looks up from that side alone. PROF=<dir> writes the server's CPU
 * profile there.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { join } from 'node:path';
import { systemClock } from '../src/clock.js';
import { nobodyToTell, setPlan } from '../src/domain/accounts.js';
import { createApiKey, secretKey } from '../src/domain/api-keys.js';
import { keptBody } from '../src/request-log/domain.js';
import { insertRequestLog } from '../src/request-log/repository.js';
import { type AnsweredRequest, rowsOf } from '../src/request-log/writer.js';
import { openDatabase } from '../src/store/database.js';
import { freePort } from '../test/cluster/harness.js';
import { databaseOfItsOwn, storeAccountKey, storeWithAccount } from '../test/helpers.js';
import { type LoadResult, load, serverCommand } from './load.js';
import { cpuMs, serviceEnv, untilReady } from './service.js';

const ROOT = join(import.meta.dirname, '..');
const seconds = Number(process.argv[2] ?? 15);
const plan = process.argv[3] === 'enterprise' ? 'enterprise' : 'free';
/** The other account's connections (wrk, or autocannon in a child: bench/load.ts); 50, as
 * `npm run bench` loads a server, unless CONNECTIONS says. */
const VICTIMS = Number(process.env.CONNECTIONS ?? 50);
const ENTRIES = 10_000;
const EMAIL_PASSWORD = 'long enough password';

/** Fills the account's log with ENTRIES errors of 4 KB bodies, as its batches would write them. */
async function fill(url: string, accountId: string, keyId: string): Promise<void> {
  const database = openDatabase(url, { poolSize: 2 });
  try {
    const at = Date.now() - 60_000;
    const body = keptBody({ name: 'x'.repeat(4_200) });
    const requests: AnsweredRequest[] = Array.from({ length: ENTRIES }, (_, i) => ({
      accountId,
      keyId,
      id: randomUUID(),
      method: 'POST',
      route: '/v1/pets',
      url: '/v1/pets',
      status: 400,
      durationMs: 1,
      at: at + i,
      ip: '127.0.0.1',
      idempotencyKey: undefined,
      replayed: false,
      body,
      errorBody: JSON.stringify({ code: 'validation_failed', message: 'y'.repeat(4_000) }),
    }));
    for (let i = 0; i < requests.length; i += 500) {
      const { segments, hours } = rowsOf(requests.slice(i, i + 500), 'bench');
      await database.write((tx) => insertRequestLog(tx, segments, hours));
    }
  } finally {
    await database.close();
  }
}

/** A portal session of the account with this email: its cookie header. */
async function signIn(base: string, email: string): Promise<string> {
  const jar = new Map<string, string>();
  const keep = (res: Response) => {
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair?.indexOf('=') ?? -1;
      if (pair && at > 0) jar.set(pair.slice(0, at), pair.slice(at + 1));
    }
  };
  const cookie = () => [...jar].map(([name, value]) => `${name}=${value}`).join('; ');
  const page = await fetch(`${base}/portal/sign-in`);
  keep(page);
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? '';
  const res = await fetch(`${base}/portal/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookie() },
    body: new URLSearchParams({ email, password: EMAIL_PASSWORD, _csrf: csrf }),
  });
  keep(res);
  if (res.status !== 303 || !jar.has('as_session')) throw new Error(`sign-in: ${res.status}`);
  return cookie();
}

/** Looks unknown ids up until `stop`; how many it looked up (not refused). */
let sent = { api: 0, portal: 0 };

async function attacker(
  url: (id: string) => string,
  headers: Record<string, string>,
  stop: () => boolean,
) {
  let done = 0;
  while (!stop()) {
    const target = url(randomUUID());
    const res = await fetch(target, { headers });
    if (target.includes('/portal/')) sent.portal++;
    else sent.api++;
    await res.arrayBuffer();
    if (res.status !== 404 && res.status !== 429) throw new Error(`lookup: ${res.status}`);
    if (res.status === 404) done++;
  }
  return done;
}

async function main(): Promise<void> {
  const { url, drop } = await databaseOfItsOwn({ migrated: true });
  const { database, accountId } = await storeWithAccount(url);
  const email = (
    await database.reader
      .selectFrom('accounts')
      .select('email')
      .where('id', '=', accountId)
      .executeTakeFirstOrThrow()
  ).email;
  await database.close();
  const attackerKey = await storeAccountKeyFor(url, accountId);
  const other = await storeAccountKey(url);
  await fill(url, accountId, attackerKey.keyId);
  // The compiled server, on its own core when the machine has two (bench/load.ts).
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const [command, argv] = serverCommand([join(ROOT, 'dist/server.js')]);
  const server = spawn(command, argv, {
    // Development: the keys made here are test keys; the portal's cookies go over http.
    env: serviceEnv(port, url, {
      APP_ENV: 'development',
      DEMO_ACCOUNT: 'false',
      ...(process.env.PROF
        ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${process.env.PROF}` }
        : {}),
      ...(process.env.TEST_DATABASE_URL && process.env.TEST_REDIS_URL
        ? { REDIS_URL: process.env.TEST_REDIS_URL, REDIS_KEY_PREFIX: `bench-${randomUUID()}:` }
        : {}),
    }),
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  try {
    await untilReady(server, base);
    const sessions = await Promise.all(Array.from({ length: 4 }, () => signIn(base, email)));
    const phase = async (withAttack: boolean) => {
      let stopped = false;
      const stop = () => stopped;
      const lookups = withAttack
        ? [
            ...Array.from({ length: process.env.ONLY === 'portal' ? 0 : 4 }, () =>
              attacker(
                (id) => `${base}/v1/requests/${id}`,
                { authorization: `Bearer ${attackerKey.secret}` },
                stop,
              ),
            ),
            ...sessions
              .slice(0, process.env.ONLY === 'api' ? 0 : 4)
              .map((cookie) => attacker((id) => `${base}/portal/requests/${id}`, { cookie }, stop)),
          ]
        : [];
      const measured = await load({
        url: `${base}/v1/pets?limit=1`,
        headers: { authorization: `Bearer ${other.secret}` },
        connections: VICTIMS,
        seconds,
      });
      stopped = true;
      const done = await Promise.all(lookups);
      return { measured, lookups: done.reduce((sum, n) => sum + n, 0) };
    };
    const quiet = await phase(false);
    const loud = await phase(true);
    // The server's CPU for each lookup, the other account's load stopped: what the looking
    // account costs the instance, whatever the clients' share of the machine.
    const pid = server.pid ?? 0;
    sent = { api: 0, portal: 0 };
    const cpuBefore = cpuMs([pid]);
    let stopped = false;
    const attack = [
      ...Array.from({ length: process.env.ONLY === 'portal' ? 0 : 4 }, () =>
        attacker(
          (id) => `${base}/v1/requests/${id}`,
          { authorization: `Bearer ${attackerKey.secret}` },
          () => stopped,
        ),
      ),
      ...sessions.slice(0, process.env.ONLY === 'api' ? 0 : 4).map((cookie) =>
        attacker(
          (id) => `${base}/portal/requests/${id}`,
          { cookie },
          () => stopped,
        ),
      ),
    ];
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    stopped = true;
    await Promise.all(attack);
    const cpu = cpuMs([pid]) - cpuBefore;
    const probe = await load({
      url: `${base}/v1/pets?limit=1`,
      headers: { authorization: `Bearer ${other.secret}` },
      connections: VICTIMS,
      seconds: 5,
    });
    const getCpuStart = cpuMs([pid]);
    const gets = await load({
      url: `${base}/v1/pets?limit=1`,
      headers: { authorization: `Bearer ${other.secret}` },
      connections: VICTIMS,
      seconds: 5,
    });
    const getCpu = cpuMs([pid]) - getCpuStart;
    void probe;
    const line = (name: string, r: { measured: LoadResult; lookups: number }) =>
      `${name}: p50 ${r.measured.p50Ms.toFixed(2)} ms, p99 ${r.measured.p99Ms.toFixed(2)} ms, ` +
      `${Math.round(r.measured.requestsPerSecond)} reads/s (${r.measured.tool}), ${r.lookups} lookups answered`;
    console.log(
      `store: ${process.env.TEST_DATABASE_URL ? 'PostgreSQL' : 'SQLite'}, looking account: ${plan}, ${VICTIMS} connections of the other`,
    );
    console.log(line('alone', quiet));
    console.log(line('with 4 API + 4 portal lookups', loud));
    const lookupsSent = sent.api + sent.portal;
    console.log(
      `server CPU: ${((cpu * 1000) / lookupsSent).toFixed(1)} µs a lookup (${JSON.stringify(sent)} in 5 s), ` +
        `${((getCpu * 1000) / (gets.requestsPerSecond * 5)).toFixed(1)} µs a GET of the other account`,
    );
    console.log(
      `p50 ratio ${(loud.measured.p50Ms / quiet.measured.p50Ms).toFixed(2)} (issue 51: under 2)`,
    );
  } finally {
    server.kill('SIGTERM');
    await once(server, 'exit');
    await drop();
  }
}

/** A key of an account already made, on the plan benchmarked (its id, for the entries' key). */
async function storeAccountKeyFor(url: string, accountId: string) {
  const database = openDatabase(url, { poolSize: 2 });
  try {
    if (plan === 'enterprise') {
      await setPlan(
        database,
        accountId,
        'enterprise',
        { perMinute: 1e6, perDay: 1e8 },
        nobodyToTell,
      );
    }
    const { key, secret } = await database.write((tx) =>
      createApiKey(tx, systemClock, 'development', accountId, secretKey(null)),
    );
    return { secret, keyId: key.id };
  } finally {
    await database.close();
  }
}

await main();
