import type { PageList } from '../pagination.js';
import type { Category, CategoryUpdate, ListCategoriesQuery, NewCategory } from '../types.js';
import {
  type CallOptions,
  type CreateOptions,
  pages,
  plain,
  post,
  type Requests,
  unwrap,
} from './context.js';

export interface CategoriesResource {
  list(query?: ListCategoriesQuery, options?: CallOptions): PageList<Category>;
  get(categoryId: number, options?: CallOptions): Promise<Category>;
  create(category: NewCategory, options?: CreateOptions): Promise<Category>;
  update(categoryId: number, changes: CategoryUpdate, options?: CallOptions): Promise<Category>;
  /** Refused (`ConflictError`, `category_in_use`) while the category has pets. */
  delete(categoryId: number, options?: CallOptions): Promise<void>;
}

export function categoriesResource(requests: Requests): CategoriesResource {
  const { api } = requests;
  const path = (categoryId: number) => ({ params: { path: { categoryId } } });
  return {
    list: (query = {}, o) =>
      pages<Category>(
        requests,
        (signal) => api.GET('/categories', { params: { query }, signal }),
        o,
      ),
    get: (categoryId, o) =>
      unwrap(api.GET('/categories/{categoryId}', { ...path(categoryId), ...plain(o) })),
    create: (category, o) => unwrap(api.POST('/categories', { body: category, ...post(o) })),
    update: (categoryId, changes, o) =>
      unwrap(
        api.PATCH('/categories/{categoryId}', { ...path(categoryId), body: changes, ...plain(o) }),
      ),
    delete: async (categoryId, o) => {
      await unwrap(api.DELETE('/categories/{categoryId}', { ...path(categoryId), ...plain(o) }));
    },
  };
}
