import { Type } from 'typebox';
import { ClosedObject, Id, ListQuery, Name, Page } from '../http/schemas/common.js';

const name = Name("The category's name: 1 to 200 characters, not only spaces.");
const dogs = { id: 1, name: 'Dogs' };

export const Category = ClosedObject(
  { id: Id('Identifier assigned on creation: 1, 2, 3… in each account.'), name },
  {
    title: 'Category',
    description: 'A group of animals; every pet names one.',
    examples: [dogs],
  },
);

export const NewCategory = ClosedObject(
  { name },
  {
    title: 'NewCategory',
    description: 'A category to add.',
    examples: [{ name: 'Dogs' }],
  },
);

export const CategoryPatch = ClosedObject(
  { name: Type.Optional(name) },
  {
    title: 'CategoryUpdate',
    description: 'Fields to change; those left out stay.',
    examples: [{ name: 'Hounds' }],
  },
);

export const CategoryPage = Page(Category, {
  title: 'CategoryPage',
  description: 'A page of categories, by id; the next page is announced in the `Link` header.',
  examples: [[dogs, { id: 2, name: 'Cats' }]],
});

export const CategoryParams = Type.Object({ categoryId: Id('The identifier of the category.') });

export const CategoryListQuery = ListQuery({});
