import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { inventory } from '../catalogue/pets.js';
import { callerOf } from '../http/auth.js';
import { sendPage, v1Url } from '../http/links.js';
import { answer, operation } from '../http/operation.js';
import { answerOf, created, unwrap } from '../http/reply.js';
import { commit } from '../store/change.js';
import { getOrder, listOrderPage, placeOrder, removeOrder, updateOrder } from './domain.js';
import {
  Inventory,
  NewOrder,
  Order,
  OrderListQuery,
  OrderPage,
  OrderParams,
  OrderPatch,
} from './schemas.js';

/** Store orders and inventory: what moves a pet from available to pending to sold. */
export const storeRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { database, clock, config, idempotency } = app.ctx;
  const { reader } = database;

  app.post(
    '/store/orders',
    operation('Store', {
      operationId: 'placeOrder',
      summary: 'Place an order',
      description:
        'Orders an `available` pet of this account; the pet becomes `pending` in the same ' +
        'transaction. Of several orders for one pet at once, exactly one succeeds.',
      scope: 'orders:write',
      config: { writes: 'changes' },
      body: NewOrder,
      success: answer(201, Order, 'The order, `placed`.', 'Location'),
      errors: ['not_found', 'pet_not_available'],
    }),
    async (request, reply) => {
      const { account } = callerOf(request);
      return idempotency.commit(
        request,
        reply,
        placeOrder(clock, account.id, request.body.petId),
        (result) =>
          answerOf(result, (order) =>
            created(order, v1Url(config, request, `/store/orders/${order.id}`)),
          ),
      );
    },
  );

  app.get(
    '/store/orders',
    operation('Store', {
      operationId: 'listOrders',
      summary: 'List orders',
      description: 'A page of orders by id; the next page is in the `Link` header.',
      scope: 'orders:read',
      querystring: OrderListQuery,
      success: answer(200, OrderPage, 'A page of orders.', 'Link'),
      errors: ['invalid_cursor'],
    }),
    (request, reply) => {
      const { account } = callerOf(request);
      return sendPage(app.ctx, request, reply, account.id, '/store/orders', async () =>
        unwrap(await listOrderPage(reader, account.id, request.query)),
      );
    },
  );

  app.get(
    '/store/orders/:orderId',
    operation('Store', {
      operationId: 'getOrder',
      summary: 'Get an order',
      description: 'One order of this account.',
      scope: 'orders:read',
      params: OrderParams,
      success: answer(200, Order, 'The order.'),
      errors: ['not_found'],
    }),
    async (request) => {
      const { account } = callerOf(request);
      return unwrap(await getOrder(reader, account.id, request.params.orderId));
    },
  );

  app.patch(
    '/store/orders/:orderId',
    operation('Store', {
      operationId: 'updateOrder',
      summary: 'Move an order',
      description:
        '`approved`, `delivered` (the pet becomes `sold`) or `cancelled` (the pet becomes ' +
        '`available`); order and pet change together or not at all.',
      scope: 'orders:write',
      config: { writes: 'changes' },
      params: OrderParams,
      body: OrderPatch,
      success: answer(200, Order, 'The order after the change.'),
      errors: ['not_found', 'invalid_transition'],
    }),
    async (request) => {
      const { account } = callerOf(request);
      return unwrap(
        await commit(
          database,
          updateOrder(clock, account.id, request.params.orderId, request.body.status),
        ),
      );
    },
  );

  app.delete(
    '/store/orders/:orderId',
    operation('Store', {
      operationId: 'deleteOrder',
      summary: 'Remove an order',
      description:
        'Removes an order that has ended (`delivered` or `cancelled`) for good; its id is ' +
        'never reused. An open order is cancelled first.',
      scope: 'orders:write',
      config: { writes: 'changes' },
      params: OrderParams,
      success: answer(204, null, 'Removed.'),
      errors: ['not_found', 'order_open'],
    }),
    async (request, reply) => {
      const { account } = callerOf(request);
      unwrap(await commit(database, removeOrder(clock, account.id, request.params.orderId)));
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/store/inventory',
    operation('Store', {
      operationId: 'getInventory',
      summary: 'Count pets by status',
      description: 'How many pets of this account are available, pending and sold.',
      scope: 'orders:read',
      success: answer(200, Inventory, 'Counts per status.'),
    }),
    async (request) => inventory(reader, callerOf(request).account.id),
  );
};
