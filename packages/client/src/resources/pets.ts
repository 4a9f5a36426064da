import { NotFoundError } from '../errors.js';
import type { PageList } from '../pagination.js';
import { ApiPromise, withLastResponse } from '../response.js';
import type { ListPetsQuery, NewPet, Pet, PetUpdate } from '../types.js';
import {
  answerOf,
  type CallOptions,
  type CreateOptions,
  created,
  nothing,
  pages,
  plain,
  type Requests,
  unwrap,
} from './context.js';

export interface PetsResource {
  /** The account's pets, by id, through every page: `for await (const pet of …)`. */
  list(query?: ListPetsQuery, options?: CallOptions): PageList<Pet>;
  /** One pet, read through `GET /v1/pets?id=` (not the deprecated `getPet`). */
  get(petId: number, options?: CallOptions): ApiPromise<Pet>;
  create(pet: NewPet, options?: CreateOptions): ApiPromise<Pet>;
  update(petId: number, changes: PetUpdate, options?: CallOptions): ApiPromise<Pet>;
  delete(petId: number, options?: CallOptions): ApiPromise<void>;
}

export function petsResource(requests: Requests): PetsResource {
  const { api } = requests;
  return {
    list: (query = {}, o) =>
      pages<Pet>(requests, (init) => api.GET('/pets', { params: { query }, ...init }), o),
    get: (petId, o) =>
      new ApiPromise(
        answerOf(
          requests,
          api.GET('/pets', { params: { query: { id: [petId] } }, ...plain(o) }),
        ).then(({ data: pets, response }) => {
          const pet = pets.find((p) => p.id === petId);
          if (!pet) {
            throw new NotFoundError({
              status: 404,
              code: 'not_found',
              message: `No pet ${petId} in this account: list them with pets.list(), or check the key's account.`,
              lastResponse: response,
            });
          }
          return { data: withLastResponse(pet, response), response };
        }),
      ),
    create: (pet, o) => created(requests, (init) => api.POST('/pets', { body: pet, ...init }), o),
    update: (petId, changes, o) =>
      unwrap(
        requests,
        api.PATCH('/pets/{petId}', { params: { path: { petId } }, body: changes, ...plain(o) }),
      ),
    delete: (petId, o) =>
      nothing(requests, api.DELETE('/pets/{petId}', { params: { path: { petId } }, ...plain(o) })),
  };
}
