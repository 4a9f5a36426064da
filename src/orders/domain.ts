import { type PetStatus, petEvent, toPet } from '../catalogue/pets.js';
import { updatePetIfStatus } from '../catalogue/pets-repository.js';
import type { Clock } from '../clock.js';
import { type Page, type PageRequest, readIdPage } from '../domain/pagination.js';
import { fail, ok, type Result } from '../domain/result.js';
import { type Change, change } from '../store/change.js';
import type { ReadDb, Tx } from '../store/database.js';
import { findNumbered, numberedPage } from '../store/numbered.js';
import { type OrderRow, toIso } from '../store/tables.js';
import { type NewEvent, recordEvents } from '../webhooks/events.js';
import { deleteEndedOrder, insertOrder, updateOrderIfStatus } from './repository.js';

/** The statuses an order may have: its row's (src/store/tables.ts). */
export { ORDER_STATUSES } from '../store/tables.js';
export type OrderStatus = OrderRow['status'];

export interface Order {
  id: number;
  petId: number;
  status: OrderStatus;
  createdAt: string;
  updatedAt: string;
}

/** placed → approved → delivered, and placed | approved → cancelled. */
const NEXT: Record<OrderStatus, readonly OrderStatus[]> = {
  placed: ['approved', 'cancelled'],
  approved: ['delivered', 'cancelled'],
  delivered: [],
  cancelled: [],
};

/** What an order's end does to its pet (which is `pending` while the order is open). */
const PET_AFTER: Partial<Record<OrderStatus, PetStatus>> = {
  delivered: 'sold',
  cancelled: 'available',
};

function toOrder(row: OrderRow): Order {
  return {
    id: row.id,
    petId: row.pet_id,
    status: row.status,
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}

const notFound = (id: number) =>
  fail(
    'not_found',
    `No order ${id} in this account; list its orders with \`GET /v1/store/orders\`.`,
  );

/** The event of an order's move (`order.placed`, `order.approved`…) or of its removal. */
function orderEvent(order: Order, type: NewEvent['type'] = `order.${order.status}`): NewEvent {
  return { type, resource: `orders/${order.id}`, data: order };
}

/**
 * Places an order for an available pet of the account, making it pending, in one write (the
 * order and its pet change together or not at all). The pet's compare-and-set (available →
 * pending) lets exactly one of many concurrent orders for one pet through, on SQLite and
 * PostgreSQL alike.
 */
export function placeOrder(
  clock: Clock,
  accountId: string,
  petId: number,
): Change<Result<Order, 'not_found' | 'pet_not_available'>> {
  return {
    options: { numbersFor: accountId },
    work: async (tx) => {
      const now = clock.now();
      const at = now.toISOString();
      const pet = await updatePetIfStatus(tx, accountId, petId, 'available', {
        status: 'pending',
        updated_at: at,
      });
      if (!pet) {
        const existing = await findNumbered(tx, 'pets', accountId, petId);
        return existing
          ? fail('pet_not_available', `Pet ${petId} is ${existing.status}, not available.`)
          : fail(
              'not_found',
              `No pet ${petId} in this account; list its pets with \`GET /v1/pets\`.`,
            );
      }
      const order = toOrder(await insertOrder(tx, accountId, petId, at));
      await recordEvents(tx, accountId, now, [
        orderEvent(order),
        petEvent('pet.updated', toPet(pet)),
      ]);
      return ok(order);
    },
  };
}

export async function getOrder(
  db: ReadDb,
  accountId: string,
  id: number,
): Promise<Result<Order, 'not_found'>> {
  const row = await findNumbered(db, 'orders', accountId, id);
  return row ? ok(toOrder(row)) : notFound(id);
}

export function listOrderPage(
  db: ReadDb,
  accountId: string,
  query: PageRequest & { status?: OrderStatus | undefined },
): Promise<Result<Page<Order>, 'invalid_cursor'>> {
  const { status } = query;
  const read = (afterId: number, take: number) =>
    numberedPage(db, 'orders', accountId, { status, afterId, take });
  return readIdPage(query, read, toOrder);
}

/**
 * Moves an order and, when it ends, its pet, together or not at all. Judged again when another
 * write moved the order between its read and its compare-and-set (PostgreSQL).
 */
export function updateOrder(
  clock: Clock,
  accountId: string,
  id: number,
  to: OrderStatus,
): Change<Result<Order, 'not_found' | 'invalid_transition'>> {
  return change(async (tx) => {
    for (let attempt = 0; attempt < 5; attempt++) {
      const result = await moveOrder(tx, clock, accountId, id, to);
      if (result) return result;
    }
    throw new Error(`order ${id} kept changing under concurrent updates`);
  });
}

/** One try of `updateOrder`; undefined when the order moved meanwhile. */
async function moveOrder(
  tx: Tx,
  clock: Clock,
  accountId: string,
  id: number,
  to: OrderStatus,
): Promise<Result<Order, 'not_found' | 'invalid_transition'> | undefined> {
  const current = await findNumbered(tx, 'orders', accountId, id);
  if (!current) return notFound(id);
  const from = current.status;
  if (from === to) return ok(toOrder(current));
  if (!NEXT[from].includes(to)) {
    const allowed = NEXT[from].length ? `; it can become ${NEXT[from].join(' or ')}` : '';
    return fail('invalid_transition', `A ${from} order cannot become ${to}${allowed}.`);
  }
  const now = clock.now();
  const at = now.toISOString();
  const row = await updateOrderIfStatus(tx, accountId, id, from, to, at);
  if (!row) return undefined; // moved by another request meanwhile: judge again
  const order = toOrder(row);
  const events = [orderEvent(order)];
  const petStatus = PET_AFTER[to];
  if (petStatus) {
    const pet = await updatePetIfStatus(tx, accountId, row.pet_id, 'pending', {
      status: petStatus,
      updated_at: at,
    });
    if (pet) events.push(petEvent('pet.updated', toPet(pet)));
  }
  await recordEvents(tx, accountId, now, events);
  return ok(order);
}

/**
 * Removes an order that has ended, delivered or cancelled: an open one owns its pet's status
 * (`order_open`). Its id is never given again; `order.deleted` carries it as it was.
 */
export function removeOrder(
  clock: Clock,
  accountId: string,
  id: number,
): Change<Result<void, 'not_found' | 'order_open'>> {
  return change(async (tx) => {
    const removed = await deleteEndedOrder(tx, accountId, id);
    if (removed) {
      await recordEvents(tx, accountId, clock.now(), [
        orderEvent(toOrder(removed), 'order.deleted'),
      ]);
      return ok(undefined);
    }
    const open = await findNumbered(tx, 'orders', accountId, id);
    return open
      ? fail('order_open', `Order ${id} is ${open.status}; cancel it first, then remove it.`)
      : notFound(id);
  });
}
