/**
 * The capacity benchmark's stores (bench/scale.ts), written straight into the store through the
 * compiled code: accounts and keys by the domain's functions, categories and pets by numbered
 * bulk inserts (`reserveNumbers`, then multi-row inserts), request-log entries encoded by the
 * log's own writer (`rowsOf`) and written by its repository, as its batches are.
 */
import { randomUUID } from 'node:crypto';

const dist = (path: string) => new URL(`../dist/${path}`, import.meta.url).href;
const { systemClock } = (await import(dist('clock.js'))) as typeof import('../src/clock.js');
const { createAccount, nobodyToTell, setPlan } = (await import(
  dist('domain/accounts.js')
)) as typeof import('../src/domain/accounts.js');
const { createApiKey, secretKey } = (await import(
  dist('domain/api-keys.js')
)) as typeof import('../src/domain/api-keys.js');
const { Passwords } = (await import(
  dist('domain/passwords.js')
)) as typeof import('../src/domain/passwords.js');
const { insertCategory } = (await import(
  dist('catalogue/categories-repository.js')
)) as typeof import('../src/catalogue/categories-repository.js');
const { reserveNumbers } = (await import(
  dist('store/numbered.js')
)) as typeof import('../src/store/numbered.js');
const { openDatabase } = (await import(
  dist('store/database.js')
)) as typeof import('../src/store/database.js');
const { keptBody } = (await import(
  dist('request-log/domain.js')
)) as typeof import('../src/request-log/domain.js');
const { insertRequestLog } = (await import(
  dist('request-log/repository.js')
)) as typeof import('../src/request-log/repository.js');
const { BATCH_EVERY_MS, rowsOf } = (await import(
  dist('request-log/writer.js')
)) as typeof import('../src/request-log/writer.js');

type Database = ReturnType<typeof openDatabase>;
type AnsweredRequest = import('../src/request-log/writer.js').AnsweredRequest;

/** What a store holds: pets per account (the first is the measured one), and the log. */
export interface Shape {
  /** Each account's pets, in the order the accounts are made. */
  pets: readonly number[];
  /** Accounts with a request log: the first ones after the pets' measured account. */
  logAccounts: number;
  /** Entries each of them holds. */
  logEntries: number;
  /** Entries of an account in one of its segments: its requests in one batch's 200 ms. */
  segment: number;
}

/** What the measurements need of a seeded store. */
export interface Seeded {
  /** The account whose pets are paged: its key, a category, its first and last pet. */
  pets: { key: string; categoryId: number; first: number; last: number };
  /** An account with a full request log: its key. */
  log: { key: string };
  accounts: number;
  totalPets: number;
  logEntries: number;
  /** What each step took, in seconds. */
  seconds: Record<string, number>;
}

/** Categories an account's pets are spread over. */
const CATEGORIES = 5;
/** Rows a pets insert statement carries (7 parameters each: within both stores' limits). */
const ROWS = 1_000;
/** Accounts made, or given keys and categories, in one go (their writes share a commit). */
const TOGETHER = 50;
const NAMES = ['Rex', 'Bella', 'Milo', 'Luna', 'Charlie', 'Coco', 'Max', 'Daisy'];
const STATUSES = ['available', 'pending', 'sold'] as const;

/**
 * Pets for `accounts` accounts, `total` in all: `measured` for the first, the rest over the
 * others by a Zipf-like law (the k-th largest holds in proportion to k^-0.8), so a few accounts
 * hold much and most hold little, as tenants do.
 */
export function petsPerAccount(accounts: number, total: number, measured: number): number[] {
  const others = accounts - 1;
  const rest = Math.max(0, total - measured);
  const weights = Array.from({ length: others }, (_, k) => (k + 1) ** -0.8);
  const sum = weights.reduce((a, b) => a + b, 0);
  const shares = weights.map((w) => (w / sum) * rest);
  const counts = shares.map(Math.floor);
  // Largest remainders first, so the counts add up to the total exactly.
  let left = rest - counts.reduce((a, b) => a + b, 0);
  const byRemainder = shares
    .map((share, k) => [share - Math.floor(share), k] as const)
    .sort((a, b) => b[0] - a[0]);
  for (const [, k] of byRemainder) {
    if (left-- <= 0) break;
    counts[k] = (counts[k] ?? 0) + 1;
  }
  return [measured, ...counts];
}

async function inGroups<T, R>(items: readonly T[], work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (let i = 0; i < items.length; i += TOGETHER) {
    results.push(...(await Promise.all(items.slice(i, i + TOGETHER).map(work))));
  }
  return results;
}

/** An account's pets, numbered from its counter, written in multi-row inserts in one write. */
async function addPets(
  database: Database,
  accountId: string,
  categories: readonly number[],
  count: number,
  at: string,
): Promise<{ first: number; last: number }> {
  const first = await database.write(
    async (tx) => {
      const first = await reserveNumbers(tx, 'pets', accountId, count);
      for (let done = 0; done < count; done += ROWS) {
        const rows = Array.from({ length: Math.min(ROWS, count - done) }, (_, i) => {
          const n = done + i;
          return {
            account_id: accountId,
            id: first + n,
            name: `${NAMES[n % NAMES.length]} ${n}`,
            category_id: categories[n % categories.length] as number,
            status: STATUSES[n % STATUSES.length] ?? 'available',
            created_at: at,
            updated_at: at,
          };
        });
        await tx.insertInto('pets').values(rows).execute();
      }
      return first;
    },
    { numbersFor: accountId },
  );
  return { first, last: first + count - 1 };
}

/**
 * The log accounts' newest entries, as the writer's batches would have written them: each
 * account answered `segment` requests in every batch's 200 ms (100 a second at 20), so each
 * batch holds a segment of each account's. Most are reads; a tenth are POSTs, a fifth of those
 * refused, with their body and error kept.
 */
async function addLog(
  database: Database,
  accounts: ReadonlyArray<{ id: string; keyId: string }>,
  shape: Shape,
): Promise<void> {
  const batches = Math.ceil(shape.logEntries / shape.segment);
  const everyMs = BATCH_EVERY_MS;
  const start = Date.now() - batches * everyMs;
  const refused = keptBody({ name: '', categoryId: 'seven', status: 'lost' });
  const errorBody = JSON.stringify({
    code: 'validation_failed',
    message: 'The request does not match the schema: /categoryId must be integer.',
    requestId: randomUUID(),
  });
  /** Batches written in one write: their inserts share one transaction and commit. */
  const perWrite = 10;
  for (let b = 0; b < batches; b += perWrite) {
    await database.write(async (tx) => {
      for (let batch = b; batch < Math.min(batches, b + perWrite); batch++) {
        const inBatch = Math.min(shape.segment, shape.logEntries - batch * shape.segment);
        const requests: AnsweredRequest[] = [];
        for (const account of accounts) {
          for (let i = 0; i < inBatch; i++) {
            const n = batch * shape.segment + i;
            const post = n % 10 === 9;
            const failed = post && n % 50 === 49;
            requests.push({
              accountId: account.id,
              keyId: account.keyId,
              id: randomUUID(),
              method: post ? 'POST' : 'GET',
              route: '/v1/pets',
              url: post ? '/v1/pets' : `/v1/pets?limit=20&cursor=${n}`,
              status: failed ? 400 : post ? 201 : 200,
              durationMs: 1 + (n % 7),
              at: start + batch * everyMs + i * (everyMs / shape.segment),
              ip: `203.0.113.${1 + (n % 200)}`,
              idempotencyKey: post ? randomUUID() : undefined,
              replayed: false,
              body: failed ? refused : null,
              errorBody: failed ? errorBody : null,
            });
          }
        }
        const { segments, hours } = rowsOf(requests, 'bench-scale');
        await insertRequestLog(tx, segments, hours);
      }
    });
  }
}

/** Writes `shape` into the migrated store at `url`; what the measurements need of it. */
export async function seedScale(
  url: string,
  shape: Shape,
  progress: (line: string) => void = () => {},
): Promise<Seeded> {
  const database = openDatabase(url, { poolSize: 4, statementTimeoutMs: 600_000 });
  const seconds: Record<string, number> = {};
  const step = async <T>(name: string, work: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    const result = await work();
    seconds[name] = (performance.now() - started) / 1000;
    progress(`${name} ${seconds[name].toFixed(1)} s`);
    return result;
  };
  try {
    await database.schema.migrate();
    // Hashed cheaply: the seed's time, not the store's (a hash is as long at any cost).
    const passwords = new Passwords(10);
    const accounts = await step('accounts', () =>
      inGroups([...shape.pets.keys()], async (i) => {
        const made = await createAccount(database, systemClock, passwords, {
          email: `scale-${i}-${randomUUID().slice(0, 8)}@example.com`,
          password: 'a benchmark password',
        });
        if (!made.ok) throw new Error(made.message);
        return made.value.id;
      }),
    );
    // The measured accounts: limits no load reaches.
    for (const id of accounts.slice(0, 2)) {
      await setPlan(database, id, 'enterprise', { perMinute: 1e9, perDay: 2e9 }, nobodyToTell);
    }
    const keys = await step('keys', () =>
      inGroups(accounts, (id) =>
        database.write((tx) => createApiKey(tx, systemClock, 'production', id, secretKey('bench'))),
      ),
    );
    const at = new Date().toISOString();
    const categories = await step('categories', () =>
      inGroups(accounts, (id) =>
        database.write(
          async (tx) => {
            const ids: number[] = [];
            for (let c = 0; c < CATEGORIES; c++) {
              ids.push((await insertCategory(tx, id, `Category ${c + 1}`, at)).id);
            }
            return ids;
          },
          { numbersFor: id },
        ),
      ),
    );
    const measured = await step('pets', async () => {
      let measured: { first: number; last: number } | undefined;
      for (const [i, count] of shape.pets.entries()) {
        if (count === 0) continue;
        const range = await addPets(
          database,
          accounts[i] as string,
          categories[i] as number[],
          count,
          at,
        );
        if (i === 0) measured = range;
      }
      return measured ?? { first: 1, last: 0 };
    });
    const logged = accounts.slice(1, 1 + shape.logAccounts).map((id, i) => ({
      id,
      keyId: (keys[1 + i] as { key: { id: string } }).key.id,
    }));
    await step('request log', () => addLog(database, logged, shape));
    return {
      pets: {
        key: (keys[0] as { secret: string }).secret,
        categoryId: (categories[0] as number[])[0] as number,
        ...measured,
      },
      log: { key: (keys[1] as { secret: string }).secret },
      accounts: accounts.length,
      totalPets: shape.pets.reduce((a, b) => a + b, 0),
      logEntries: logged.length * shape.logEntries,
      seconds,
    };
  } finally {
    await database.close();
  }
}
