import type { PageList } from '../pagination.js';
import type { ApiPromise } from '../response.js';
import type { Inventory, ListOrdersQuery, NewOrder, Order, OrderUpdate } from '../types.js';
import {
  type CallOptions,
  type CreateOptions,
  created,
  nothing,
  pages,
  plain,
  type Requests,
  unwrap,
} from './context.js';

export interface StoreResource {
  readonly orders: {
    list(query?: ListOrdersQuery, options?: CallOptions): PageList<Order>;
    get(orderId: number, options?: CallOptions): ApiPromise<Order>;
    /** Places an order for an available pet, which becomes `pending`. */
    create(order: NewOrder, options?: CreateOptions): ApiPromise<Order>;
    update(orderId: number, changes: OrderUpdate, options?: CallOptions): ApiPromise<Order>;
    /** Removes an order that has ended (delivered or cancelled); an open one is a ConflictError. */
    delete(orderId: number, options?: CallOptions): ApiPromise<void>;
  };
  /** Counts of the account's pets by status. */
  inventory(options?: CallOptions): ApiPromise<Inventory>;
}

export function storeResource(requests: Requests): StoreResource {
  const { api } = requests;
  const path = (orderId: number) => ({ params: { path: { orderId } } });
  return {
    orders: {
      list: (query = {}, o) =>
        pages<Order>(
          requests,
          (init) => api.GET('/store/orders', { params: { query }, ...init }),
          o,
        ),
      get: (orderId, o) =>
        unwrap(requests, api.GET('/store/orders/{orderId}', { ...path(orderId), ...plain(o) })),
      create: (order, o) =>
        created(requests, (init) => api.POST('/store/orders', { body: order, ...init }), o),
      update: (orderId, changes, o) =>
        unwrap(
          requests,
          api.PATCH('/store/orders/{orderId}', { ...path(orderId), body: changes, ...plain(o) }),
        ),
      delete: (orderId, o) =>
        nothing(requests, api.DELETE('/store/orders/{orderId}', { ...path(orderId), ...plain(o) })),
    },
    inventory: (o) => unwrap(requests, api.GET('/store/inventory', plain(o))),
  };
}
