import { Type } from 'typebox';
import { ORDER_STATUSES } from '../../domain/orders.js';
import { Cursor, Id, Limit } from './common.js';

export const OrderStatus = Type.Enum(ORDER_STATUSES, {
  description: '`placed` → `approved` → `delivered`; `placed` or `approved` → `cancelled`.',
});

const Timestamp = (description: string) => Type.String({ format: 'date-time', description });

export const Order = Type.Object(
  {
    id: Id('Unique identifier assigned on creation.'),
    petId: Id('The ordered pet.'),
    status: OrderStatus,
    createdAt: Timestamp('Creation time (UTC).'),
    updatedAt: Timestamp('Last status change (UTC).'),
  },
  { title: 'Order', additionalProperties: false },
);

export const NewOrder = Type.Object(
  { petId: Id('An `available` pet of this account; it becomes `pending`.') },
  { title: 'NewOrder', additionalProperties: false },
);

export const OrderPatch = Type.Object(
  { status: OrderStatus },
  {
    title: 'OrderPatch',
    additionalProperties: false,
    description: '`delivered` makes the pet `sold`; `cancelled` makes it `available` again.',
  },
);

export const OrderParams = Type.Object({ orderId: Id('The identifier of the order.') });

export const OrderListQuery = Type.Object(
  { limit: Limit, status: Type.Optional(OrderStatus), cursor: Type.Optional(Cursor) },
  { additionalProperties: false },
);

export const Inventory = Type.Object(
  {
    available: Type.Integer({ description: 'Pets available.' }),
    pending: Type.Integer({ description: 'Pets on an open order.' }),
    sold: Type.Integer({ description: 'Pets sold.' }),
  },
  { title: 'Inventory', additionalProperties: false },
);
