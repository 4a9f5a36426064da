import { Type } from 'typebox';
import { Cursor, Id, Limit, Name } from './common.js';

export const Category = Type.Object(
  { id: Id('Unique identifier assigned on creation.'), name: Name("The category's name.") },
  { title: 'Category', additionalProperties: false },
);

export const NewCategory = Type.Object(
  { name: Name("The category's name.") },
  { title: 'NewCategory', additionalProperties: false },
);

export const CategoryPatch = Type.Object(
  { name: Type.Optional(Name("The category's name.")) },
  { title: 'CategoryPatch', additionalProperties: false },
);

export const CategoryParams = Type.Object({ categoryId: Id('The identifier of the category.') });

export const CategoryListQuery = Type.Object(
  { limit: Limit, cursor: Type.Optional(Cursor) },
  { additionalProperties: false },
);
