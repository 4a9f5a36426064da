/**
 * What an event's fan-out to the account's webhook endpoints costs the write that records it
 * (src/webhooks/events-repository.ts), with 1 and 20 endpoints that want the event:
 *
 * - `POST-like write`: `createPet` in `Database.write` (the pet, its counter, its
 *   `pet.created` event and one delivery per endpoint), CONCURRENCY writes in flight, so group
 *   commit batches them as under load; µs per write (wall time / writes).
 * - `fan-out alone`: EVENTS events recorded in one write; µs per event, no commit in it.
 *
 * SQLite (a temporary file) always; PostgreSQL too when DATABASE_URL is set (a fresh database
 * made from it, dropped after). Medians of ROUNDS rounds.
 * Usage: npm run bench:fan-out [-- rounds]
 */
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freshPostgres } from '../test/helpers.js';
import { median } from './stats.js';

// The compiled service, as production runs it (see bench/limiter.ts).
const dist = (path: string) => new URL(`../dist/${path}`, import.meta.url).href;
const { systemClock } = (await import(dist('clock.js'))) as typeof import('../src/clock.js');
const { createPet } = (await import(
  dist('catalogue/pets.js')
)) as typeof import('../src/catalogue/pets.js');
const { insertAccount } = (await import(
  dist('store/accounts-repository.js')
)) as typeof import('../src/store/accounts-repository.js');
const { insertCategory } = (await import(
  dist('catalogue/categories-repository.js')
)) as typeof import('../src/catalogue/categories-repository.js');
const { openDatabase } = (await import(
  dist('store/database.js')
)) as typeof import('../src/store/database.js');
const { insertEvent } = (await import(
  dist('webhooks/events-repository.js')
)) as typeof import('../src/webhooks/events-repository.js');
const { insertEndpoint } = (await import(
  dist('webhooks/repository.js')
)) as typeof import('../src/webhooks/repository.js');
type Database = import('../src/store/database.js').Database;

const ROUNDS = Number(process.argv[2] ?? 5);
const WRITES = 4_000;
const CONCURRENCY = 64;
const EVENTS = 4_000;
/** What each endpoint wants: the event written, among others. */
const TYPES = ['order.placed', 'pet.created', 'pet.updated'];

/** An account with `endpoints` enabled endpoints that want TYPES, and a category. */
async function tenant(database: Database, endpoints: number) {
  const accountId = `acct_bench_${randomUUID()}`;
  const at = new Date().toISOString();
  // A write of its own first: on PostgreSQL a write numbering for the account locks its counters.
  await database.write((tx) =>
    insertAccount(tx, {
      id: accountId,
      email: `${accountId}@example.com`,
      password_hash: 'unused',
      plan: 'free',
      created_at: at,
    }),
  );
  const category = await database.write(
    async (tx) => {
      // Straight to the store: past the API's 16 endpoints an account may have.
      for (let i = 0; i < endpoints; i++) {
        await insertEndpoint(tx, {
          id: `we_bench_${randomUUID()}`,
          account_id: accountId,
          url: `https://example.com/hook/${i}`,
          event_types: TYPES,
          enabled: true,
          disabled_reason: null,
          secret: 'sealed',
          previous_secret: null,
          previous_secret_until: null,
          failing_since: null,
          created_at: at,
          updated_at: at,
        });
      }
      return insertCategory(tx, accountId, 'Bench', at);
    },
    { numbersFor: accountId },
  );
  return { accountId, categoryId: category.id };
}

async function writes(database: Database, endpoints: number): Promise<number> {
  const { accountId, categoryId } = await tenant(database, endpoints);
  let next = 0;
  const worker = async () => {
    while (next++ < WRITES) {
      const made = await database.write(
        (tx) => createPet(tx, systemClock, accountId, { name: 'Rex', categoryId }),
        { numbersFor: accountId },
      );
      if (!made.ok) throw new Error(made.message);
    }
  };
  const start = process.hrtime.bigint();
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return Number(process.hrtime.bigint() - start) / 1000 / WRITES;
}

async function fanOut(database: Database, endpoints: number): Promise<number> {
  const { accountId } = await tenant(database, endpoints);
  const created_at = new Date().toISOString();
  const start = process.hrtime.bigint();
  await database.write(async (tx) => {
    for (let i = 0; i < EVENTS; i++) {
      await insertEvent(tx, {
        account_id: accountId,
        id: `evt_${String(i).padStart(8, '0')}`,
        type: 'pet.created',
        resource: `pets/${i}`,
        data: '{}',
        created_at,
        traceparent: null,
      });
    }
  });
  return Number(process.hrtime.bigint() - start) / 1000 / EVENTS;
}

async function measure(name: string, url: string): Promise<void> {
  const database = openDatabase(url, { poolSize: 4 });
  try {
    await database.schema.migrate();
    for (const endpoints of [1, 20]) {
      // A warm-up round, then the rounds measured.
      await writes(database, endpoints);
      const perWrite: number[] = [];
      const perEvent: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        perWrite.push(await writes(database, endpoints));
        perEvent.push(await fanOut(database, endpoints));
      }
      console.log(
        `${name.padEnd(10)} ${String(endpoints).padStart(2)} endpoint(s): ` +
          `POST-like write ${median(perWrite).toFixed(1).padStart(6)} µs, ` +
          `fan-out alone ${median(perEvent).toFixed(1).padStart(6)} µs/event`,
      );
    }
  } finally {
    await database.close();
  }
}

const file = join(tmpdir(), `animal-store-fan-out-${randomUUID()}.db`);
try {
  await measure('SQLite', `sqlite:${file}`);
} finally {
  for (const suffix of ['', '-wal', '-shm']) rmSync(file + suffix, { force: true });
}
if (process.env.DATABASE_URL) {
  const own = await freshPostgres(process.env.DATABASE_URL, 'as_bench');
  try {
    await measure('PostgreSQL', own.url);
  } finally {
    await own.drop();
  }
}
