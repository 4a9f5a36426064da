import type { Capability } from '../capability.js';
import { keyedRoutes } from '../http/auth.js';
import { categoryRoutes } from './categories-routes.js';
import { Category, CategoryPage, CategoryPatch, NewCategory } from './categories-schemas.js';
import { petRoutes } from './pets-routes.js';
import { NewPet, Pet, PetPage, PetPatch, PetStatus } from './pets-schemas.js';

/**
 * The catalogue: each account's pets and their categories, numbered per account, read through
 * kept pages (src/http/page-cache.ts). A write to it moves the account's data version on before
 * it is answered (in the shared mode, on every instance), so whoever reads next, anywhere,
 * reads it.
 */
export const catalogue: Capability = {
  name: 'catalogue',
  routes: keyedRoutes('/v1', petRoutes, categoryRoutes),
  components: [
    Pet,
    NewPet,
    PetPatch,
    PetPage,
    PetStatus,
    Category,
    NewCategory,
    CategoryPatch,
    CategoryPage,
  ],
  // A deleted pet's event carries the pet as it was.
  events: { 'pet.created': Pet, 'pet.updated': Pet, 'pet.deleted': Pet },
};
