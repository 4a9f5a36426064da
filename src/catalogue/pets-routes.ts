import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { GET_PET } from '../domain/deprecations.js';
import { callerOf } from '../http/auth.js';
import { deprecated } from '../http/deprecation.js';
import { sendPage, v1Url } from '../http/links.js';
import { answer, operation } from '../http/operation.js';
import { answerOf, created, unwrap } from '../http/reply.js';
import { commit } from '../store/change.js';
import { addPet, getPet, listPetPage, removePet, updatePet } from './pets.js';
import { NewPet, Pet, PetListQuery, PetPage, PetParams, PetPatch } from './pets-schemas.js';

export const petRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { database, clock, config, idempotency } = app.ctx;
  const { reader } = database;

  app.get(
    '/pets',
    operation('Pets', {
      operationId: 'listPets',
      summary: 'List animals',
      description:
        'A page of animals ordered by id. The body is a bare array; the next page, if any, ' +
        'is announced in the `Link` header with `rel="next"`.',
      scope: 'pets:read',
      querystring: PetListQuery,
      success: answer(200, PetPage, 'A page of animals.', 'Link'),
      errors: ['invalid_cursor'],
    }),
    (request, reply) => {
      const { account } = callerOf(request);
      return sendPage(app.ctx, request, reply, account.id, '/pets', async () =>
        unwrap(await listPetPage(reader, account.id, request.query)),
      );
    },
  );

  app.post(
    '/pets',
    operation('Pets', {
      operationId: 'createPet',
      summary: 'Add an animal',
      description: '`status` defaults to `available`. The category must exist in this account.',
      scope: 'pets:write',
      // One insert: a new row above every id, which no full page reaches.
      config: { writes: 'appends' },
      body: NewPet,
      success: answer(201, Pet, 'The created animal, with its assigned `id`.', 'Location'),
      errors: ['unknown_category'],
    }),
    async (request, reply) => {
      const { account } = callerOf(request);
      return idempotency.commit(request, reply, addPet(clock, account.id, request.body), (result) =>
        answerOf(result, (pet) => created(pet, v1Url(config, request, `/pets/${pet.id}`))),
      );
    },
  );

  app.get(
    '/pets/:petId',
    operation('Pets', {
      operationId: 'getPet',
      summary: 'Get an animal (deprecated)',
      description:
        'Deprecated: removed on 5 December 2030 (`Sunset` header); from then on it answers ' +
        '`410 endpoint_removed`. Read pets by id with `GET /v1/pets?id={petId}` instead ' +
        '(`listPets`; up to 100 ids, `?id=1&id=7`), which its `Link: rel="successor-version"` names.',
      deprecated: true,
      scope: 'pets:read',
      // Before validation: once removed, every shape of this request answers 410.
      preValidation: deprecated(app.ctx, GET_PET),
      params: PetParams,
      success: answer(200, Pet, 'The animal.', 'Deprecation', 'Sunset', 'DeprecationLink'),
      errors: ['not_found', 'endpoint_removed'],
    }),
    async (request) => {
      const { account } = callerOf(request);
      return unwrap(await getPet(reader, account.id, request.params.petId));
    },
  );

  app.patch(
    '/pets/:petId',
    operation('Pets', {
      operationId: 'updatePet',
      summary: 'Update an animal',
      description:
        'Changes only the fields sent. Status moves follow the life cycle: ' +
        'available → pending → sold, pending → available, available → sold; sold is final.',
      scope: 'pets:write',
      config: { writes: 'changes' },
      params: PetParams,
      body: PetPatch,
      success: answer(200, Pet, 'The animal after the change.'),
      errors: ['not_found', 'unknown_category', 'invalid_transition', 'pet_on_order'],
    }),
    async (request) => {
      const { account } = callerOf(request);
      return unwrap(
        await commit(database, updatePet(clock, account.id, request.params.petId, request.body)),
      );
    },
  );

  app.delete(
    '/pets/:petId',
    operation('Pets', {
      operationId: 'deletePet',
      summary: 'Remove an animal',
      description: 'Removes the animal for good; its id is never reused.',
      scope: 'pets:write',
      config: { writes: 'changes' },
      params: PetParams,
      success: answer(204, null, 'Removed.'),
      errors: ['not_found', 'pet_on_order'],
    }),
    async (request, reply) => {
      const { account } = callerOf(request);
      unwrap(await commit(database, removePet(clock, account.id, request.params.petId)));
      return reply.code(204).send(null);
    },
  );
};
