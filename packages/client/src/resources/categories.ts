import type { PageList } from '../pagination.js';
import type { ApiPromise } from '../response.js';
import type { Category, CategoryUpdate, ListCategoriesQuery, NewCategory } from '../types.js';
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

export interface CategoriesResource {
  list(query?: ListCategoriesQuery, options?: CallOptions): PageList<Category>;
  get(categoryId: number, options?: CallOptions): ApiPromise<Category>;
  create(category: NewCategory, options?: CreateOptions): ApiPromise<Category>;
  update(categoryId: number, changes: CategoryUpdate, options?: CallOptions): ApiPromise<Category>;
  /** Refused (`ConflictError`, `category_in_use`) while the category has pets. */
  delete(categoryId: number, options?: CallOptions): ApiPromise<void>;
}

export function categoriesResource(requests: Requests): CategoriesResource {
  const { api } = requests;
  const path = (categoryId: number) => ({ params: { path: { categoryId } } });
  return {
    list: (query = {}, o) =>
      pages<Category>(
        requests,
        (init) => api.GET('/categories', { params: { query }, ...init }),
        o,
      ),
    get: (categoryId, o) =>
      unwrap(requests, api.GET('/categories/{categoryId}', { ...path(categoryId), ...plain(o) })),
    create: (category, o) =>
      created(requests, (init) => api.POST('/categories', { body: category, ...init }), o),
    update: (categoryId, changes, o) =>
      unwrap(
        requests,
        api.PATCH('/categories/{categoryId}', { ...path(categoryId), body: changes, ...plain(o) }),
      ),
    delete: (categoryId, o) =>
      nothing(
        requests,
        api.DELETE('/categories/{categoryId}', { ...path(categoryId), ...plain(o) }),
      ),
  };
}
