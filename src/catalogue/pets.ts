import type { Clock } from '../clock.js';
import { type Page, type PageRequest, readIdPage } from '../domain/pagination.js';
import { fail, ok, type Result } from '../domain/result.js';
import { type Change, change, type Write } from '../store/change.js';
import type { ReadDb, Tx } from '../store/database.js';
import { findNumbered, insertedWith } from '../store/numbered.js';
import { isForeignKeyViolation } from '../store/store-errors.js';
import type { PetRow } from '../store/tables.js';
import { type NewEvent, recordEvents } from '../webhooks/events.js';
import {
  countPetsByStatus,
  deletePetWithoutOpenOrder,
  hasOpenOrder,
  listPets,
  sendPetInsert,
  updatePetIfStatus,
} from './pets-repository.js';

/** The statuses a pet may have: its row's (src/store/tables.ts). */
export { PET_STATUSES } from '../store/tables.js';
export type PetStatus = PetRow['status'];

export interface Pet {
  id: number;
  name: string;
  categoryId: number;
  status: PetStatus;
}

export interface NewPet {
  name: string;
  categoryId: number;
  status?: PetStatus | undefined;
}

export type PetChanges = Partial<NewPet>;

/**
 * The status life cycle: available → pending → sold, pending → available (order cancelled),
 * available → sold (direct sale). Sold is final. Staying in the same status is not a move.
 */
const NEXT: Record<PetStatus, readonly PetStatus[]> = {
  available: ['pending', 'sold'],
  pending: ['available', 'sold'],
  sold: [],
};

export function canMove(from: PetStatus, to: PetStatus): boolean {
  return from === to || NEXT[from].includes(to);
}

export function toPet(row: PetRow): Pet {
  return {
    id: row.id,
    name: row.name,
    categoryId: row.category_id,
    status: row.status,
  };
}

const notFound = (id: number) =>
  fail('not_found', `No pet ${id} in this account; list its pets with \`GET /v1/pets\`.`);
const onOrder = (id: number) =>
  fail('pet_on_order', `Pet ${id} has an open order; cancel or deliver the order first.`);
const unknownCategory = (id: number | undefined) =>
  fail('unknown_category', `No category ${id} in this account; create it first.`);

/** The event of a pet's change, its data the pet as the API shows it. */
export function petEvent(type: 'pet.created' | 'pet.updated' | 'pet.deleted', pet: Pet): NewEvent {
  return { type, resource: `pets/${pet.id}`, data: pet };
}

/**
 * Adds a pet and its event. A blind write (WriteOptions.blind): nothing it reads decides what
 * it writes; the insert fails only on its category's foreign key, answered as a Result.
 */
export function addPet(
  clock: Clock,
  accountId: string,
  input: NewPet,
): Write<Result<Pet, 'unknown_category'>> {
  return {
    options: { blind: true, numbersFor: accountId },
    work: (tx) => createPet(tx, clock, accountId, input),
  };
}

/** Adds a pet in a write of the caller's, which says `numbersFor` the account. */
export async function createPet(
  tx: Tx,
  clock: Clock,
  accountId: string,
  input: NewPet,
): Promise<Result<Pet, 'unknown_category'>> {
  const now = clock.now();
  const at = now.toISOString();
  try {
    const { pet, stored } = await sendPetInsert(tx, {
      account_id: accountId,
      name: input.name,
      category_id: input.categoryId,
      status: input.status ?? 'available',
      created_at: at,
      updated_at: at,
    });
    // The event, sent right behind the insert on PostgreSQL.
    await insertedWith(
      stored,
      recordEvents(tx, accountId, now, [petEvent('pet.created', toPet(pet))]),
    );
    return ok(toPet(pet));
  } catch (err) {
    // The composite foreign key (account_id, category_id) rejects other accounts' categories too.
    if (isForeignKeyViolation(err)) return unknownCategory(input.categoryId);
    throw err;
  }
}

export async function getPet(
  db: ReadDb,
  accountId: string,
  id: number,
): Promise<Result<Pet, 'not_found'>> {
  const row = await findNumbered(db, 'pets', accountId, id);
  return row ? ok(toPet(row)) : notFound(id);
}

export function listPetPage(
  db: ReadDb,
  accountId: string,
  query: PageRequest & { status?: PetStatus | undefined; id?: readonly number[] | undefined },
): Promise<Result<Page<Pet>, 'invalid_cursor'>> {
  const { status, id: ids } = query;
  const read = (afterId: number, take: number) =>
    listPets(db, accountId, { status, ids, afterId, take });
  return readIdPage(query, read, toPet);
}

export function updatePet(
  clock: Clock,
  accountId: string,
  id: number,
  changes: PetChanges,
): Change<Result<Pet, 'not_found' | 'unknown_category' | 'invalid_transition' | 'pet_on_order'>> {
  return change(async (tx) => {
    // Compare-and-set on the status read: if another request moved the pet in between, read
    // again and judge the move against the new status.
    for (let attempt = 0; attempt < 5; attempt++) {
      const current = await findNumbered(tx, 'pets', accountId, id);
      if (!current) return notFound(id);
      const from = current.status;
      const to = changes.status ?? from;
      if (to !== from && (await hasOpenOrder(tx, accountId, id))) return onOrder(id);
      if (!canMove(from, to)) {
        return fail(
          'invalid_transition',
          `A ${from} pet cannot become ${to}` +
            (from === 'sold' ? ' (sold is final).' : `; it can become ${NEXT[from].join(' or ')}.`),
        );
      }
      try {
        const now = clock.now();
        const row = await updatePetIfStatus(tx, accountId, id, from, {
          ...(changes.name !== undefined && { name: changes.name }),
          ...(changes.categoryId !== undefined && { category_id: changes.categoryId }),
          status: to,
          updated_at: now.toISOString(),
        });
        if (row) {
          const pet = toPet(row);
          await recordEvents(tx, accountId, now, [petEvent('pet.updated', pet)]);
          return ok(pet);
        }
      } catch (err) {
        if (isForeignKeyViolation(err)) return unknownCategory(changes.categoryId);
        throw err;
      }
    }
    throw new Error(`pet ${id} kept changing under concurrent updates`);
  });
}

export function removePet(
  clock: Clock,
  accountId: string,
  id: number,
): Change<Result<void, 'not_found' | 'pet_on_order'>> {
  return change(async (tx) => {
    const removed = await deletePetWithoutOpenOrder(tx, accountId, id);
    if (removed) {
      await recordEvents(tx, accountId, clock.now(), [petEvent('pet.deleted', toPet(removed))]);
      return ok(undefined);
    }
    return (await findNumbered(tx, 'pets', accountId, id)) ? onOrder(id) : notFound(id);
  });
}

export interface Inventory {
  available: number;
  pending: number;
  sold: number;
}

export async function inventory(db: ReadDb, accountId: string): Promise<Inventory> {
  const counts: Inventory = { available: 0, pending: 0, sold: 0 };
  for (const { status, n } of await countPetsByStatus(db, accountId)) {
    if (status in counts) counts[status] = n;
  }
  return counts;
}
