import { createCategory } from '../catalogue/categories.js';
import { createPet, type PetStatus } from '../catalogue/pets.js';
import type { Clock } from '../clock.js';
import type { AppEnv } from '../config.js';
import { fail, ok, type Result } from '../domain/result.js';
import { placeOrder } from '../orders/domain.js';
import { type Change, decided, within } from '../store/change.js';
import type { Tx } from '../store/handles.js';
import { recordEvents } from '../webhooks/events.js';
import { type Removed, removeTestData } from './repository.js';

/** Why a production instance resets nothing: its data is live, not test data. */
export const LIVE_DATA =
  'This is a production instance: its keys are live (`as_live_…`) and its data is kept.';

/** What a reset removed and, with the sample, added: its answer and its event's `data`. */
export interface SandboxReset {
  removed: Removed;
  seeded: { categories: number; pets: number; orders: number } | null;
}

/** The sample catalogue: a pet in each status, the pending one on an open order. */
const SAMPLE: Record<string, Array<[name: string, status: PetStatus | 'ordered']>> = {
  Dogs: [
    ['Rex', 'available'],
    ['Bella', 'ordered'],
    ['Max', 'sold'],
  ],
  Cats: [
    ['Luna', 'available'],
    ['Oliver', 'available'],
  ],
  Birds: [['Kiwi', 'available']],
};

/** What the sample adds. */
const SAMPLE_SIZE = {
  categories: Object.keys(SAMPLE).length,
  pets: Object.values(SAMPLE).flat().length,
  orders: Object.values(SAMPLE)
    .flat()
    .filter(([, status]) => status === 'ordered').length,
};

/**
 * Removes the account's test data in one transaction (src/sandbox/repository.ts), records
 * `sandbox.reset`, and with `seed` adds the sample catalogue, its events after the reset's.
 * What the sample adds is fixed (SAMPLE_SIZE); a sample refused would fail the whole write.
 * Ids go on from where they were: a pet made after a reset never has an id an earlier pet had
 * (docs/decisions/0084-sandbox-reset.md).
 */
export function resetSandbox(
  clock: Clock,
  env: AppEnv,
  accountId: string,
  seed: boolean,
): Change<Result<SandboxReset, 'sandbox_only'>> {
  // The one place that says where a reset may run: the API, the portal and the CLI ask here.
  if (env === 'production') return decided(fail('sandbox_only', LIVE_DATA));
  return {
    options: { numbersFor: accountId },
    work: async (tx) => {
      const removed = await removeTestData(tx, accountId);
      const reset: SandboxReset = { removed, seeded: seed ? SAMPLE_SIZE : null };
      await recordEvents(tx, accountId, clock.now(), [
        { type: 'sandbox.reset', resource: `accounts/${accountId}`, data: reset },
      ]);
      if (seed) await seedSample(tx, clock, accountId);
      return ok(reset);
    },
  };
}

async function seedSample(tx: Tx, clock: Clock, accountId: string): Promise<void> {
  for (const [categoryName, pets] of Object.entries(SAMPLE)) {
    const category = await createCategory(tx, clock, accountId, categoryName);
    for (const [name, status] of pets) {
      const pet = await createPet(tx, clock, accountId, {
        name,
        categoryId: category.id,
        status: status === 'ordered' ? 'available' : status,
      });
      if (!pet.ok) throw new Error(`the sample pet ${name} was refused: ${pet.message}`);
      if (status === 'ordered') {
        const order = await within(tx, placeOrder(clock, accountId, pet.value.id));
        if (!order.ok) throw new Error(`the sample order was refused: ${order.message}`);
      }
    }
  }
}
