import type { Capability } from '../capability.js';
import { keyedRoutes } from '../http/auth.js';
import { storeRoutes } from './routes.js';
import { Inventory, NewOrder, Order, OrderPage, OrderPatch, OrderStatus } from './schemas.js';

/**
 * The store's orders (`/v1/store/…`): an order moves its pet through its life cycle, so its
 * writes are announced as the catalogue's are (a pet's status is in its pages).
 */
export const orders: Capability = {
  name: 'orders',
  routes: keyedRoutes('/v1', storeRoutes),
  components: [Order, NewOrder, OrderPatch, OrderPage, OrderStatus, Inventory],
  events: {
    'order.placed': Order,
    'order.approved': Order,
    'order.delivered': Order,
    'order.cancelled': Order,
    'order.deleted': Order,
  },
};
