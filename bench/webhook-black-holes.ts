/**
 * How many black-hole webhook endpoints one instance tolerates: the server (src/server.ts, its
 * own process, default webhook settings) with N accounts of E endpoints each that accept the
 * connection and never answer, each account sent a stream of events, and one healthy account
 * whose deliveries' delays (arrival minus the event's createdAt) are measured once the black
 * holes fill their slots. `NxEf`: endpoints that answer their first delivery at once, and then
 * go silent (so they count as answering until a delivery of theirs is held).
 *
 * Usage: tsx bench/webhook-black-holes.ts [seconds per run] [NxE[f] …]
 * (defaults: 60 s; 1x8 4x8 8x8 16x1 32x1 64x1 4x16f). PostgreSQL when TEST_DATABASE_URL is set.
 */
import { Answerer, BlackHole } from '../test/black-hole.js';
import { databaseOfItsOwn, storeAccountKey } from '../test/helpers.js';
import { kill, startServer } from '../test/process/server-process.js';

const seconds = Number(process.argv[2] ?? 60);
const runs = process.argv.slice(3).length
  ? process.argv.slice(3)
  : ['1x8', '4x8', '8x8', '16x1', '32x1', '64x1', '4x16f'];
/** The default WEBHOOK_TIMEOUT_SECONDS: the black holes' slots are full after it. */
const WARM_UP_MS = 12_000;

async function run(accounts: number, endpoints: number, answersFirst: boolean): Promise<void> {
  const { url, drop } = await databaseOfItsOwn({ migrated: true });
  const blackHole = await new BlackHole({ answersFirst }).start();
  const healthy = await new Answerer().start();
  const silent = [];
  for (let i = 0; i < accounts; i++) silent.push(await storeAccountKey(url));
  const well = await storeAccountKey(url);
  const server = await startServer({ DATABASE_URL: url, DEMO_ACCOUNT: 'false' });
  try {
    const post = async (secret: string, path: string, body: unknown) => {
      const res = await fetch(`${server.base}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const text = await res.text();
      if (res.status !== 201) throw new Error(`${path}: ${res.status} ${text}`);
      return JSON.parse(text) as { id: number };
    };
    const categories = [];
    for (const [i, account] of silent.entries()) {
      for (let e = 0; e < endpoints; e++) {
        await post(account.secret, '/v1/webhooks', {
          url: `${blackHole.url}/silent/${i}/${e}`,
          events: ['pet.created'],
        });
      }
      categories.push(await post(account.secret, '/v1/categories', { name: 'Dogs' }));
    }
    await post(well.secret, '/v1/webhooks', {
      url: `${healthy.url}/well`,
      events: ['pet.created'],
    });
    const wellCategory = await post(well.secret, '/v1/categories', { name: 'Cats' });

    // Forty events a second over the silent accounts (five each at most, in turn), two for the
    // healthy one.
    const started = Date.now();
    let measured = 0;
    for (let tick = 0; Date.now() - started < seconds * 1000; tick++) {
      const next = started + (tick + 1) * 100;
      const posts: Promise<unknown>[] = [];
      for (let k = 0; k < Math.min(4, accounts); k++) {
        const i = (tick * 4 + k) % accounts;
        const account = silent[i];
        if (account) {
          posts.push(
            post(account.secret, '/v1/pets', { name: 'Rex', categoryId: categories[i]?.id }),
          );
        }
      }
      if (tick % 5 === 0) {
        if (Date.now() - started >= WARM_UP_MS) measured++;
        posts.push(post(well.secret, '/v1/pets', { name: 'Tom', categoryId: wellCategory.id }));
      }
      await Promise.all(posts);
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - Date.now())));
    }
    // What is still on its way has 10 s more.
    await new Promise((resolve) => setTimeout(resolve, 10_000));
    const arrivals = healthy.of('/well').map((r) => {
      const created = Date.parse(JSON.parse(r.body).createdAt);
      return { since: created - started, delay: r.at - created };
    });
    const quantile = (values: number[], p: number) => {
      const sorted = [...values].sort((x, y) => x - y);
      return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? NaN;
    };
    const delays = arrivals.filter((a) => a.since >= WARM_UP_MS).map((a) => a.delay);
    // The p99 of the events written in each 10 s of the run, warm-up included.
    const windows: string[] = [];
    for (let from = 0; from < seconds * 1000; from += 10_000) {
      const inWindow = arrivals.filter((a) => a.since >= from && a.since < from + 10_000);
      windows.push(
        (
          quantile(
            inWindow.map((a) => a.delay),
            0.99,
          ) / 1000
        ).toFixed(1),
      );
    }
    console.log(
      `${`${accounts}x${endpoints}${answersFirst ? 'f' : ''}`.padEnd(6)} black holes: ${(accounts * endpoints).toString().padStart(3)} endpoints, ` +
        `${blackHole.mostHeldInAll.toString().padStart(2)} POSTs held at most | healthy after warm-up: ` +
        `${delays.length} of ${measured} delivered, delay p50 ${quantile(delays, 0.5)} ms, ` +
        `p99 ${quantile(delays, 0.99)} ms, max ${Math.max(...delays)} ms | p99 by 10 s (s): ${windows.join(' ')}`,
    );
  } finally {
    await kill(server, 'SIGTERM');
    await blackHole.close();
    await healthy.close();
    await drop();
  }
}

for (const spec of runs) {
  const [accounts, endpoints] = spec.replace(/f$/, '').split('x').map(Number);
  await run(accounts ?? 1, endpoints ?? 1, spec.endsWith('f'));
}
