import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { GET_PET } from '../domain/deprecations.js';
import { callerOf } from '../http/auth.js';
import { deprecated } from '../http/deprecation.js';
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
import { addPet, getPet, listPetPage, removePet, updatePet } from './pets.js';
import { NewPet, Pet, PetListQuery, PetPage, PetParams, PetPatch } from './pets-schemas.js';

const tags = ['Pets'];
const base = [...COMMON_ERRORS, ...BEARER_ERRORS] as const;

export const petRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { database, clock, config, idempotency } = app.ctx;
  const { reader } = database;

  app.get(
    '/pets',
    {
      schema: {
        operationId: 'listPets',
        summary: 'List animals',
        description:
          'A page of animals ordered by id. The body is a bare array; the next page, if any, ' +
          'is announced in the `Link` header with `rel="next"`.',
        tags,
        security: bearerScope('pets:read'),
        querystring: PetListQuery,
        response: {
          200: {
            ...PetPage,
            description: 'A page of animals.',
            headers: documentedHeaders('Link'),
          },
          ...errorResponses(...base, 'validation_failed', 'invalid_cursor'),
        },
      },
    },
    (request, reply) => {
      const { account } = callerOf(request);
      return sendPage(app.ctx, request, reply, account.id, '/pets', async () =>
        unwrap(await listPetPage(reader, account.id, request.query)),
      );
    },
  );

  app.post(
    '/pets',
    {
      // One insert: a new row above every id, which no full page reaches.
      config: { writes: 'appends' },
      schema: {
        operationId: 'createPet',
        summary: 'Add an animal',
        description: '`status` defaults to `available`. The category must exist in this account.',
        tags,
        security: bearerScope('pets:write'),
        body: NewPet,
        response: {
          201: {
            ...Pet,
            description: 'The created animal, with its assigned `id`.',
            headers: documentedHeaders('Location'),
          },
          ...errorResponses(...base, ...BODY_ERRORS, 'unknown_category'),
        },
      },
    },
    async (request, reply) => {
      const { account } = callerOf(request);
      return idempotency.commit(request, reply, addPet(clock, account.id, request.body), (result) =>
        answerOf(result, (pet) => created(pet, v1Url(config, request, `/pets/${pet.id}`))),
      );
    },
  );

  app.get(
    '/pets/:petId',
    {
      // Before validation: once removed, every shape of this request answers 410.
      preValidation: deprecated(app.ctx, GET_PET),
      schema: {
        operationId: 'getPet',
        summary: 'Get an animal (deprecated)',
        description:
          'Deprecated: removed on 5 December 2030 (`Sunset` header); from then on it answers ' +
          '`410 endpoint_removed`. Read pets by id with `GET /v1/pets?id={petId}` instead ' +
          '(`listPets`; up to 100 ids, `?id=1&id=7`), which its `Link: rel="successor-version"` names.',
        deprecated: true,
        tags,
        security: bearerScope('pets:read'),
        params: PetParams,
        response: {
          200: {
            ...Pet,
            description: 'The animal.',
            headers: documentedHeaders('Deprecation', 'Sunset', 'DeprecationLink'),
          },
          ...errorResponses(...base, 'validation_failed', 'not_found', 'endpoint_removed'),
        },
      },
    },
    async (request) => {
      const { account } = callerOf(request);
      return unwrap(await getPet(reader, account.id, request.params.petId));
    },
  );

  app.patch(
    '/pets/:petId',
    {
      config: { writes: 'changes' },
      schema: {
        operationId: 'updatePet',
        summary: 'Update an animal',
        description:
          'Changes only the fields sent. Status moves follow the life cycle: ' +
          'available → pending → sold, pending → available, available → sold; sold is final.',
        tags,
        security: bearerScope('pets:write'),
        params: PetParams,
        body: PetPatch,
        response: {
          200: { ...Pet, description: 'The animal after the change.' },
          ...errorResponses(
            ...base,
            ...BODY_ERRORS,
            'not_found',
            'unknown_category',
            'invalid_transition',
            'pet_on_order',
          ),
        },
      },
    },
    async (request) => {
      const { account } = callerOf(request);
      return unwrap(
        await commit(database, updatePet(clock, account.id, request.params.petId, request.body)),
      );
    },
  );

  app.delete(
    '/pets/:petId',
    {
      config: { writes: 'changes' },
      schema: {
        operationId: 'deletePet',
        summary: 'Remove an animal',
        description: 'Removes the animal for good; its id is never reused.',
        tags,
        security: bearerScope('pets:write'),
        params: PetParams,
        response: {
          204: { type: 'null', description: 'Removed.' },
          ...errorResponses(...base, 'validation_failed', 'not_found', 'pet_on_order'),
        },
      },
    },
    async (request, reply) => {
      const { account } = callerOf(request);
      unwrap(await commit(database, removePet(clock, account.id, request.params.petId)));
      return reply.code(204).send(null);
    },
  );
};
