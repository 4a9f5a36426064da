import { Type } from 'typebox';
import { PET_STATUSES } from '../../domain/pets.js';
import { Cursor, Id, Limit, Name } from './common.js';

export const PetStatus = Type.Enum(PET_STATUSES, {
  title: 'PetStatus',
  description: 'Availability: `available`, `pending` or `sold`.',
});

const petFields = {
  name: Name("The animal's name."),
  categoryId: Id('Identifier of the category the animal belongs to.'),
};

export const Pet = Type.Object(
  {
    id: Id('Unique identifier assigned on creation.'),
    ...petFields,
    status: PetStatus,
  },
  { title: 'Pet', additionalProperties: false },
);

export const NewPet = Type.Object(
  { ...petFields, status: Type.Optional(PetStatus) },
  {
    title: 'NewPet',
    additionalProperties: false,
    description: '`status` defaults to `available` when omitted.',
  },
);

export const PetPatch = Type.Object(
  {
    name: Type.Optional(petFields.name),
    categoryId: Type.Optional(petFields.categoryId),
    status: Type.Optional(PetStatus),
  },
  {
    title: 'PetPatch',
    additionalProperties: false,
    description:
      'Fields to change. Status moves: available → pending, available → sold, ' +
      'pending → available, pending → sold; sold is final.',
  },
);

export const PetParams = Type.Object({ petId: Id('The identifier of the animal.') });

/** Most ids one list request may name (`?id=1&id=7…`). */
export const MAX_IDS = 100;

export const PetListQuery = Type.Object(
  {
    limit: Limit,
    status: Type.Optional(PetStatus),
    id: Type.Optional(
      Type.Array(Id('An id to read; repeat the parameter for more.'), {
        minItems: 1,
        maxItems: MAX_IDS,
        description:
          `Only the pets with these ids (\`?id=1&id=7\`, up to ${MAX_IDS}); ids this ` +
          'account does not have are left out. Combines with `status` and pages like any list.',
      }),
    ),
    cursor: Type.Optional(Cursor),
  },
  { additionalProperties: false },
);
