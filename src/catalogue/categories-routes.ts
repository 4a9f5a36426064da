import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { callerOf } from '../http/auth.js';
import { sendPage, v1Url } from '../http/links.js';
import { created, unwrap } from '../http/reply.js';
import {
  BEARER_ERRORS,
  BODY_ERRORS,
  COMMON_ERRORS,
  documentedHeaders,
  errorResponses,
} from '../http/schemas/common.js';
import { bearerScope } from '../http/scopes.js';
import { commit } from '../store/change.js';
import {
  addCategory,
  getCategory,
  listCategoryPage,
  removeCategory,
  updateCategory,
} from './categories.js';
import {
  Category,
  CategoryListQuery,
  CategoryPage,
  CategoryParams,
  CategoryPatch,
  NewCategory,
} from './categories-schemas.js';

const tags = ['Categories'];
const base = [...COMMON_ERRORS, ...BEARER_ERRORS] as const;

export const categoryRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { database, clock, config, idempotency } = app.ctx;
  const { reader } = database;

  app.get(
    '/categories',
    {
      schema: {
        operationId: 'listCategories',
        summary: 'List categories',
        description: 'A page of categories ordered by id; the next page is in the `Link` header.',
        tags,
        security: bearerScope('categories:read'),
        querystring: CategoryListQuery,
        response: {
          200: {
            ...CategoryPage,
            description: 'A page of categories.',
            headers: documentedHeaders('Link'),
          },
          ...errorResponses(...base, 'validation_failed', 'invalid_cursor'),
        },
      },
    },
    (request, reply) => {
      const { account } = callerOf(request);
      return sendPage(app.ctx, request, reply, account.id, '/categories', async () =>
        unwrap(await listCategoryPage(reader, account.id, request.query)),
      );
    },
  );

  app.post(
    '/categories',
    {
      // One insert: a new row above every id, which no full page reaches.
      config: { writes: 'appends' },
      schema: {
        operationId: 'createCategory',
        summary: 'Add a category',
        description: 'Categories group animals; every animal names one with `categoryId`.',
        tags,
        security: bearerScope('categories:write'),
        body: NewCategory,
        response: {
          201: {
            ...Category,
            description: 'The created category.',
            headers: documentedHeaders('Location'),
          },
          ...errorResponses(...base, ...BODY_ERRORS),
        },
      },
    },
    async (request, reply) => {
      const { account } = callerOf(request);
      return idempotency.commit(
        request,
        reply,
        addCategory(clock, account.id, request.body.name),
        (category) => created(category, v1Url(config, request, `/categories/${category.id}`)),
      );
    },
  );

  app.get(
    '/categories/:categoryId',
    {
      schema: {
        operationId: 'getCategory',
        summary: 'Get a category',
        description: 'One category of this account.',
        tags,
        security: bearerScope('categories:read'),
        params: CategoryParams,
        response: {
          200: { ...Category, description: 'The category.' },
          ...errorResponses(...base, 'validation_failed', 'not_found'),
        },
      },
    },
    async (request) => {
      const { account } = callerOf(request);
      return unwrap(await getCategory(reader, account.id, request.params.categoryId));
    },
  );

  app.patch(
    '/categories/:categoryId',
    {
      config: { writes: 'changes' },
      schema: {
        operationId: 'updateCategory',
        summary: 'Rename a category',
        description: 'Changes only the fields sent.',
        tags,
        security: bearerScope('categories:write'),
        params: CategoryParams,
        body: CategoryPatch,
        response: {
          200: { ...Category, description: 'The category after the change.' },
          ...errorResponses(...base, ...BODY_ERRORS, 'not_found'),
        },
      },
    },
    async (request) => {
      const { account } = callerOf(request);
      return unwrap(
        await commit(database, updateCategory(account.id, request.params.categoryId, request.body)),
      );
    },
  );

  app.delete(
    '/categories/:categoryId',
    {
      config: { writes: 'changes' },
      schema: {
        operationId: 'deleteCategory',
        summary: 'Remove a category',
        description: 'Only an empty category can be removed; one that still has pets answers 409.',
        tags,
        security: bearerScope('categories:write'),
        params: CategoryParams,
        response: {
          204: { type: 'null', description: 'Removed.' },
          ...errorResponses(...base, 'validation_failed', 'not_found', 'category_in_use'),
        },
      },
    },
    async (request, reply) => {
      const { account } = callerOf(request);
      unwrap(await commit(database, removeCategory(account.id, request.params.categoryId)));
      return reply.code(204).send(null);
    },
  );
};
