import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { callerOf } from '../http/auth.js';
import { sendPage, v1Url } from '../http/links.js';
import { answer, operation } from '../http/operation.js';
import { created, unwrap } from '../http/reply.js';
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

export const categoryRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { database, clock, config, idempotency } = app.ctx;
  const { reader } = database;

  app.get(
    '/categories',
    operation('Categories', {
      operationId: 'listCategories',
      summary: 'List categories',
      description: 'A page of categories ordered by id; the next page is in the `Link` header.',
      scope: 'categories:read',
      querystring: CategoryListQuery,
      success: answer(200, CategoryPage, 'A page of categories.', 'Link'),
      errors: ['invalid_cursor'],
    }),
    (request, reply) => {
      const { account } = callerOf(request);
      return sendPage(app.ctx, request, reply, account.id, '/categories', async () =>
        unwrap(await listCategoryPage(reader, account.id, request.query)),
      );
    },
  );

  app.post(
    '/categories',
    operation('Categories', {
      operationId: 'createCategory',
      summary: 'Add a category',
      description: 'Categories group animals; every animal names one with `categoryId`.',
      scope: 'categories:write',
      // One insert: a new row above every id, which no full page reaches.
      config: { writes: 'appends' },
      body: NewCategory,
      success: answer(201, Category, 'The created category.', 'Location'),
    }),
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
    operation('Categories', {
      operationId: 'getCategory',
      summary: 'Get a category',
      description: 'One category of this account.',
      scope: 'categories:read',
      params: CategoryParams,
      success: answer(200, Category, 'The category.'),
      errors: ['not_found'],
    }),
    async (request) => {
      const { account } = callerOf(request);
      return unwrap(await getCategory(reader, account.id, request.params.categoryId));
    },
  );

  app.patch(
    '/categories/:categoryId',
    operation('Categories', {
      operationId: 'updateCategory',
      summary: 'Rename a category',
      description: 'Changes only the fields sent.',
      scope: 'categories:write',
      config: { writes: 'changes' },
      params: CategoryParams,
      body: CategoryPatch,
      success: answer(200, Category, 'The category after the change.'),
      errors: ['not_found'],
    }),
    async (request) => {
      const { account } = callerOf(request);
      return unwrap(
        await commit(database, updateCategory(account.id, request.params.categoryId, request.body)),
      );
    },
  );

  app.delete(
    '/categories/:categoryId',
    operation('Categories', {
      operationId: 'deleteCategory',
      summary: 'Remove a category',
      description: 'Only an empty category can be removed; one that still has pets answers 409.',
      scope: 'categories:write',
      config: { writes: 'changes' },
      params: CategoryParams,
      success: answer(204, null, 'Removed.'),
      errors: ['not_found', 'category_in_use'],
    }),
    async (request, reply) => {
      const { account } = callerOf(request);
      unwrap(await commit(database, removeCategory(account.id, request.params.categoryId)));
      return reply.code(204).send(null);
    },
  );
};
