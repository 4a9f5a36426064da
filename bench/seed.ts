/**
 * The benchmark's data, written straight into the store through the compiled code: one account
 * with N pets, ten more with 1,000 each (so the indexes hold other tenants' rows too), twenty
 * with 300 each for the mixed loads, and enterprise keys whose limits never bind.
 */
import { randomUUID } from 'node:crypto';
import type { MixTenant } from './load.js';

const dist = (path: string) => new URL(`../dist/${path}`, import.meta.url).href;
const { systemClock } = (await import(dist('clock.js'))) as typeof import('../src/clock.js');
const { createAccount, nobodyToTell, setPlan } = (await import(
  dist('domain/accounts.js')
)) as typeof import('../src/domain/accounts.js');
const { createApiKey, secretKey } = (await import(
  dist('domain/api-keys.js')
)) as typeof import('../src/domain/api-keys.js');
const { loadConfig } = (await import(dist('config.js'))) as typeof import('../src/config.js');
const { Passwords } = (await import(
  dist('domain/passwords.js')
)) as typeof import('../src/domain/passwords.js');
const { encodeCursor } = (await import(
  dist('domain/pagination.js')
)) as typeof import('../src/domain/pagination.js');
const { insertCategory } = (await import(
  dist('catalogue/categories-repository.js')
)) as typeof import('../src/catalogue/categories-repository.js');
const { reserveNumbers } = (await import(
  dist('store/numbered.js')
)) as typeof import('../src/store/numbered.js');
const { openDatabase } = (await import(
  dist('store/database.js')
)) as typeof import('../src/store/database.js');

export interface Seeded {
  key: string;
  categoryId: number;
  /** A cursor nine tenths of the way through the big account's pets. */
  deepCursor: string;
  /** The tenants of the mixed loads, each with its reads. */
  tenants: MixTenant[];
  /** An account with a category and no pets: the ids the insert baseline's rows carry. */
  throwaway: { accountId: string; categoryId: number };
}

/** Tenants of the mixed loads, and the pets each has (as the issue measured them). */
const MIX_TENANTS = 20;
const MIX_PETS = 300;

const STATUSES = ['available', 'pending', 'sold'] as const;
const BATCH = 500;

type Database = ReturnType<typeof openDatabase>;

async function tenant(database: Database, pets: number, env: 'production') {
  // At the default cost: the benchmark's accounts are made as a deployment's would be.
  const passwords = new Passwords(loadConfig({}).passwordHashCost);
  const account = await createAccount(database, systemClock, passwords, {
    email: `bench-${randomUUID()}@example.com`,
    password: 'a benchmark password',
  });
  if (!account.ok) throw new Error(account.message);
  // Before any instance runs: nobody keeps anything of the account yet.
  await setPlan(
    database,
    account.value.id,
    'enterprise',
    { perMinute: 1e9, perDay: 2e9 },
    nobodyToTell,
  );
  const { secret } = await database.write((tx) =>
    createApiKey(tx, systemClock, env, account.value.id, secretKey('bench')),
  );
  const now = new Date().toISOString();
  const numbersFor = account.value.id;
  const category = await database.write(
    (tx) => insertCategory(tx, account.value.id, 'Bench', now),
    { numbersFor },
  );
  const first = await database.write(
    async (tx) => {
      const first = await reserveNumbers(tx, 'pets', account.value.id, pets);
      for (let done = 0; done < pets; done += BATCH) {
        const rows = Array.from({ length: Math.min(BATCH, pets - done) }, (_, i) => ({
          account_id: account.value.id,
          id: first + done + i,
          name: `Pet ${done + i}`,
          category_id: category.id,
          status: STATUSES[(done + i) % 3] ?? 'available',
          created_at: now,
          updated_at: now,
        }));
        await tx.insertInto('pets').values(rows).execute();
      }
      return first;
    },
    { numbersFor },
  );
  const last = first + pets - 1;
  return { accountId: account.value.id, key: secret, categoryId: category.id, first, last };
}

export async function seed(databaseUrl: string, pets: number): Promise<Seeded> {
  const database = openDatabase(databaseUrl, { poolSize: 2 });
  try {
    await database.schema.migrate();
    // Other tenants first and last, so the big account's rows sit between theirs.
    for (let i = 0; i < 5; i++) await tenant(database, 1_000, 'production');
    const big = await tenant(database, pets, 'production');
    for (let i = 0; i < 5; i++) await tenant(database, 1_000, 'production');
    const deepId = big.first + Math.floor((big.last - big.first) * 0.9);
    const tenants: MixTenant[] = [];
    for (let i = 0; i < MIX_TENANTS; i++) {
      const t = await tenant(database, MIX_PETS, 'production');
      const deep = encodeCursor(t.first + Math.floor((t.last - t.first) * 0.9));
      tenants.push({
        key: t.key,
        categoryId: t.categoryId,
        // First pages, status filters and deep pages, as clients page through a catalogue.
        reads: [
          '/v1/pets?limit=20',
          '/v1/pets?status=available&limit=20',
          '/v1/pets?status=sold&limit=20',
          `/v1/pets?limit=20&cursor=${deep}`,
        ],
      });
    }
    const throwaway = await tenant(database, 0, 'production');
    return {
      key: big.key,
      categoryId: big.categoryId,
      deepCursor: encodeCursor(deepId),
      tenants,
      throwaway: { accountId: throwaway.accountId, categoryId: throwaway.categoryId },
    };
  } finally {
    await database.close();
  }
}
