import { Type } from 'typebox';
import {
  ClosedObject,
  Count,
  Id,
  ListQuery,
  Page,
  StringEnum,
  Timestamp,
} from '../http/schemas/common.js';
import { ORDER_STATUSES } from './domain.js';

export const OrderStatus = StringEnum(ORDER_STATUSES, {
  title: 'OrderStatus',
  description: '`placed` → `approved` → `delivered`; `placed` or `approved` → `cancelled`.',
  examples: ['placed'],
});

const placed = {
  id: 1,
  petId: 1,
  status: 'placed',
  createdAt: '2026-01-05T10:00:00.000Z',
  updatedAt: '2026-01-05T10:00:00.000Z',
} as const;

export const Order = ClosedObject(
  {
    id: Id('Identifier assigned on creation: 1, 2, 3… in each account.'),
    petId: Id('The ordered pet.'),
    status: OrderStatus,
    createdAt: Timestamp('Creation time (UTC).'),
    updatedAt: Timestamp('Last status change (UTC).'),
  },
  {
    title: 'Order',
    description: 'An order for one pet; while open (`placed`, `approved`) it holds the pet.',
    examples: [placed],
  },
);

export const NewOrder = ClosedObject(
  { petId: Id('An `available` pet of this account; it becomes `pending`.') },
  {
    title: 'NewOrder',
    description: 'The pet to order.',
    examples: [{ petId: 1 }],
  },
);

export const OrderPatch = ClosedObject(
  { status: OrderStatus },
  {
    title: 'OrderUpdate',
    description: '`delivered` makes the pet `sold`; `cancelled` makes it `available` again.',
    examples: [{ status: 'approved' }],
  },
);

export const OrderPage = Page(Order, {
  title: 'OrderPage',
  description: 'A page of orders, by id; the next page is announced in the `Link` header.',
  examples: [[placed]],
});

export const OrderParams = Type.Object({ orderId: Id('The identifier of the order.') });

export const OrderListQuery = ListQuery({ status: Type.Optional(OrderStatus) });

export const Inventory = ClosedObject(
  {
    available: Count('Pets available.'),
    pending: Count('Pets on an open order.'),
    sold: Count('Pets sold.'),
  },
  {
    title: 'Inventory',
    description: "How many of this account's pets are in each status.",
    examples: [{ available: 12, pending: 2, sold: 5 }],
  },
);
