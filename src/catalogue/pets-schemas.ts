import { Type } from 'typebox';
import { ClosedObject, Id, ListQuery, Name, Page, StringEnum } from '../http/schemas/common.js';
import { PET_STATUSES } from './pets.js';

export const PetStatus = StringEnum(PET_STATUSES, {
  title: 'PetStatus',
  description:
    'Availability: `available` (can be ordered), `pending` (on an open order) or `sold` (final).',
  examples: ['available'],
});

const petFields = {
  name: Name("The animal's name: 1 to 200 characters, not only spaces, no control characters."),
  categoryId: Id('Identifier of the category the animal belongs to (one of this account).'),
};

const rex = { id: 1, name: 'Rex', categoryId: 1, status: 'available' } as const;

export const Pet = ClosedObject(
  {
    id: Id('Identifier assigned on creation: 1, 2, 3… in each account.'),
    ...petFields,
    status: PetStatus,
  },
  {
    title: 'Pet',
    description: 'An animal offered in the store.',
    examples: [rex],
  },
);

export const NewPet = ClosedObject(
  { ...petFields, status: Type.Optional(PetStatus) },
  {
    title: 'NewPet',
    description: 'An animal to add. `status` defaults to `available` when omitted.',
    examples: [{ name: 'Rex', categoryId: 1 }],
  },
);

export const PetPatch = ClosedObject(
  {
    name: Type.Optional(petFields.name),
    categoryId: Type.Optional(petFields.categoryId),
    status: Type.Optional(PetStatus),
  },
  {
    title: 'PetUpdate',
    description:
      'Fields to change; those left out stay. Status moves: available → pending, ' +
      'available → sold, pending → available, pending → sold; sold is final.',
    examples: [{ status: 'sold' }],
  },
);

export const PetPage = Page(Pet, {
  title: 'PetPage',
  description: 'A page of animals, by id; the next page is announced in the `Link` header.',
  examples: [[rex, { id: 2, name: 'Tom', categoryId: 2, status: 'pending' }]],
});

export const PetParams = Type.Object({ petId: Id('The identifier of the animal.') });

/** Most ids one list request may name (`?id=1&id=7…`). */
export const MAX_IDS = 100;

export const PetListQuery = ListQuery({
  status: Type.Optional(PetStatus),
  id: Type.Optional(
    Type.Array(Id('An id to read; repeat the parameter for more.'), {
      minItems: 1,
      maxItems: MAX_IDS,
      description:
        `Only the pets with these ids (\`?id=1&id=7\`, up to ${MAX_IDS}); ids this ` +
        'account does not have are left out. Combines with `status` and pages like any ' +
        'list. This is how to read pets by id (`getPet` is deprecated).',
    }),
  ),
});
