import { NotFoundError } from '../errors.js';
import type { PageList } from '../pagination.js';
import type { ListPetsQuery, NewPet, Pet, PetUpdate } from '../types.js';
import {
  type CallOptions,
  type CreateOptions,
  pages,
  plain,
  post,
  type Requests,
  unwrap,
} from './context.js';

export interface PetsResource {
  /** The account's pets, by id, through every page: `for await (const pet of …)`. */
  list(query?: ListPetsQuery, options?: CallOptions): PageList<Pet>;
  /** One pet, read through `GET /v1/pets?id=` (not the deprecated `getPet`). */
  get(petId: number, options?: CallOptions): Promise<Pet>;
  create(pet: NewPet, options?: CreateOptions): Promise<Pet>;
  update(petId: number, changes: PetUpdate, options?: CallOptions): Promise<Pet>;
  delete(petId: number, options?: CallOptions): Promise<void>;
}

export function petsResource(requests: Requests): PetsResource {
  const { api } = requests;
  return {
    list: (query = {}, o) =>
      pages<Pet>(requests, (signal) => api.GET('/pets', { params: { query }, signal }), o),
    get: async (petId, o) => {
      const pets = await unwrap(
        api.GET('/pets', { params: { query: { id: [petId] } }, ...plain(o) }),
      );
      const pet = pets.find((p) => p.id === petId);
      if (!pet) {
        throw new NotFoundError({
          status: 404,
          code: 'not_found',
          message: `No pet ${petId} in this account.`,
        });
      }
      return pet;
    },
    create: (pet, o) => unwrap(api.POST('/pets', { body: pet, ...post(o) })),
    update: (petId, changes, o) =>
      unwrap(
        api.PATCH('/pets/{petId}', { params: { path: { petId } }, body: changes, ...plain(o) }),
      ),
    delete: async (petId, o) => {
      await unwrap(api.DELETE('/pets/{petId}', { params: { path: { petId } }, ...plain(o) }));
    },
  };
}
