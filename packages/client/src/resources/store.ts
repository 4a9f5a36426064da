import type { PageList } from '../pagination.js';
import type { Inventory, ListOrdersQuery, NewOrder, Order, OrderUpdate } from '../types.js';
import {
  type CallOptions,
  type CreateOptions,
  pages,
  plain,
  post,
  type Requests,
  unwrap,
} from './context.js';

export interface StoreResource {
  readonly orders: {
    list(query?: ListOrdersQuery, options?: CallOptions): PageList<Order>;
    get(orderId: number, options?: CallOptions): Promise<Order>;
    /** Places an order for an available pet, which becomes `pending`. */
    create(order: NewOrder, options?: CreateOptions): Promise<Order>;
    update(orderId: number, changes: OrderUpdate, options?: CallOptions): Promise<Order>;
  };
  /** Counts of the account's pets by status. */
  inventory(options?: CallOptions): Promise<Inventory>;
}

export function storeResource(requests: Requests): StoreResource {
  const { api } = requests;
  const path = (orderId: number) => ({ params: { path: { orderId } } });
  return {
    orders: {
      list: (query = {}, o) =>
        pages<Order>(
          requests,
          (signal) => api.GET('/store/orders', { params: { query }, signal }),
          o,
        ),
      get: (orderId, o) =>
        unwrap(api.GET('/store/orders/{orderId}', { ...path(orderId), ...plain(o) })),
      create: (order, o) => unwrap(api.POST('/store/orders', { body: order, ...post(o) })),
      update: (orderId, changes, o) =>
        unwrap(
          api.PATCH('/store/orders/{orderId}', { ...path(orderId), body: changes, ...plain(o) }),
        ),
    },
    inventory: (o) => unwrap(api.GET('/store/inventory', plain(o))),
  };
}
