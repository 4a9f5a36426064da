import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { inventory } from '../catalogue/pets.js';
import { callerOf } from '../http/auth.js';
import { sendPage, v1Url } from '../http/links.js';
import { answerOf, created, unwrap } from '../http/reply.js';
import {
  BEARER_ERRORS,
  BODY_ERRORS,
  COMMON_ERRORS,
  documentedHeaders,
  errorResponses,
} from '../http/schemas/common.js';
import { bearerScope } from '../http/scopes.js';
import { commit } from '../store/change.js';
import { getOrder, listOrderPage, placeOrder, updateOrder } from './domain.js';
import {
  Inventory,
  NewOrder,
  Order,
  OrderListQuery,
  OrderPage,
  OrderParams,
  OrderPatch,
} from './schemas.js';

const tags = ['Store'];
const base = [...COMMON_ERRORS, ...BEARER_ERRORS] as const;

/** Store orders and inventory: what moves a pet from available to pending to sold. */
export const storeRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { database, clock, config, idempotency } = app.ctx;
  const { reader } = database;

  app.post(
    '/store/orders',
    {
      config: { writes: 'changes' },
      schema: {
        operationId: 'placeOrder',
        summary: 'Place an order',
        description:
          'Orders an `available` pet of this account; the pet becomes `pending` in the same ' +
          'transaction. Of several orders for one pet at once, exactly one succeeds.',
        tags,
        security: bearerScope('orders:write'),
        body: NewOrder,
        response: {
          201: {
            ...Order,
            description: 'The order, `placed`.',
            headers: documentedHeaders('Location'),
          },
          ...errorResponses(...base, ...BODY_ERRORS, 'not_found', 'pet_not_available'),
        },
      },
    },
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
    {
      schema: {
        operationId: 'listOrders',
        summary: 'List orders',
        description: 'A page of orders by id; the next page is in the `Link` header.',
        tags,
        security: bearerScope('orders:read'),
        querystring: OrderListQuery,
        response: {
          200: {
            ...OrderPage,
            description: 'A page of orders.',
            headers: documentedHeaders('Link'),
          },
          ...errorResponses(...base, 'validation_failed', 'invalid_cursor'),
        },
      },
    },
    (request, reply) => {
      const { account } = callerOf(request);
      return sendPage(app.ctx, request, reply, account.id, '/store/orders', async () =>
        unwrap(await listOrderPage(reader, account.id, request.query)),
      );
    },
  );

  app.get(
    '/store/orders/:orderId',
    {
      schema: {
        operationId: 'getOrder',
        summary: 'Get an order',
        description: 'One order of this account.',
        tags,
        security: bearerScope('orders:read'),
        params: OrderParams,
        response: {
          200: { ...Order, description: 'The order.' },
          ...errorResponses(...base, 'validation_failed', 'not_found'),
        },
      },
    },
    async (request) => {
      const { account } = callerOf(request);
      return unwrap(await getOrder(reader, account.id, request.params.orderId));
    },
  );

  app.patch(
    '/store/orders/:orderId',
    {
      config: { writes: 'changes' },
      schema: {
        operationId: 'updateOrder',
        summary: 'Move an order',
        description:
          '`approved`, `delivered` (the pet becomes `sold`) or `cancelled` (the pet becomes ' +
          '`available`); order and pet change together or not at all.',
        tags,
        security: bearerScope('orders:write'),
        params: OrderParams,
        body: OrderPatch,
        response: {
          200: { ...Order, description: 'The order after the change.' },
          ...errorResponses(...base, ...BODY_ERRORS, 'not_found', 'invalid_transition'),
        },
      },
    },
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

  app.get(
    '/store/inventory',
    {
      schema: {
        operationId: 'getInventory',
        summary: 'Count pets by status',
        description: 'How many pets of this account are available, pending and sold.',
        tags,
        security: bearerScope('orders:read'),
        response: {
          200: { ...Inventory, description: 'Counts per status.' },
          ...errorResponses(...base),
        },
      },
    },
    async (request) => inventory(reader, callerOf(request).account.id),
  );
};
