import { randomBytes } from 'node:crypto';
import { createCategory } from './catalogue/categories.js';
import { existingCategoryNames } from './catalogue/categories-repository.js';
import { createPet, type PetStatus } from './catalogue/pets.js';
import type { Clock } from './clock.js';
import type { AppEnv } from './config.js';
import { createAccount } from './domain/accounts.js';
import { createApiKey, secretKey } from './domain/api-keys.js';
import type { Passwords } from './domain/passwords.js';
import { countAccounts } from './store/accounts-repository.js';
import { commit } from './store/change.js';
import type { Database, ReadDb, Tx, Writer } from './store/database.js';

export const DEMO_EMAIL = 'demo@animal-store.local';

const DEMO_PETS: Record<string, Array<[string, PetStatus]>> = {
  Dogs: [
    ['Rex', 'available'],
    ['Bella', 'available'],
    ['Max', 'pending'],
  ],
  Cats: [
    ['Luna', 'available'],
    ['Oliver', 'sold'],
  ],
  Birds: [['Kiwi', 'available']],
};

/** Whether the account has the demo categories already (`seed` run before): seeding again
 * would add a second set. */
export async function hasDemoData(db: ReadDb, accountId: string): Promise<boolean> {
  const names = Object.keys(DEMO_PETS);
  return (await existingCategoryNames(db, accountId, names)).length === names.length;
}

/** A few categories and pets, so a first `GET /v1/pets` shows something. Its write says
 * `numbersFor` the account. */
export async function seedDemoData(tx: Tx, clock: Clock, accountId: string): Promise<number> {
  let pets = 0;
  for (const [categoryName, list] of Object.entries(DEMO_PETS)) {
    const category = await createCategory(tx, clock, accountId, categoryName);
    for (const [name, status] of list) {
      const created = await createPet(tx, clock, accountId, {
        name,
        categoryId: category.id,
        status,
      });
      if (created.ok) pets++;
    }
  }
  return pets;
}

export interface DemoAccount {
  email: string;
  password: string;
  key: string;
}

/** On the first start of an empty development store: an account, a key and some pets. */
export async function createDemoAccountIfEmpty(
  database: Pick<Database, 'reader' | 'write'>,
  clock: Clock,
  passwords: Passwords,
  env: AppEnv,
): Promise<DemoAccount | undefined> {
  if ((await countAccounts(database.reader)) > 0) return undefined;
  return createDemoAccount(database, clock, passwords, env);
}

/** The demo account with a key and demo pets; undefined if it exists already. */
export async function createDemoAccount(
  store: Writer,
  clock: Clock,
  passwords: Passwords,
  env: AppEnv,
): Promise<DemoAccount | undefined> {
  const password = randomBytes(12).toString('base64url');
  const account = await createAccount(store, clock, passwords, { email: DEMO_EMAIL, password });
  if (!account.ok) return undefined; // it exists (maybe another instance just made it)
  const { secret } = await commit(store, {
    work: async (tx) => {
      const key = await createApiKey(tx, clock, env, account.value.id, secretKey('demo'));
      await seedDemoData(tx, clock, account.value.id);
      return key;
    },
    options: { numbersFor: account.value.id },
  });
  return { email: DEMO_EMAIL, password, key: secret };
}
