import { Type } from 'typebox';
import { ClosedObject, Count, StringEnum } from '../http/schemas/common.js';

const removed = {
  pets: 6,
  categories: 3,
  orders: 1,
  messages: 2,
  events: 14,
  deliveries: 9,
} as const;

export const SandboxResetQuery = Type.Object(
  {
    seed: Type.Optional(
      StringEnum(['sample'], {
        description:
          '`sample` adds a sample catalogue after the reset: three categories, pets in each ' +
          'status and an order.',
      }),
    ),
  },
  { additionalProperties: false },
);

export const SandboxReset = ClosedObject(
  {
    removed: Type.Object(
      {
        pets: Count('Pets removed.'),
        categories: Count('Categories removed.'),
        orders: Count('Orders removed.'),
        messages: Count('Messages removed.'),
        events: Count('Events removed.'),
        deliveries: Count('Webhook deliveries removed.'),
      },
      { additionalProperties: false, description: 'What the reset removed, by kind.' },
    ),
    seeded: Type.Union(
      [
        Type.Object(
          {
            categories: Count('Categories added.'),
            pets: Count('Pets added.'),
            orders: Count('Orders placed.'),
          },
          { additionalProperties: false, description: 'What `seed=sample` added.' },
        ),
        Type.Null(),
      ],
      { description: 'What `seed=sample` added; null without it.' },
    ),
  },
  {
    title: 'SandboxReset',
    description:
      "What a reset of the account's test data removed and, with `seed=sample`, added. Also " +
      'the `data` of the `sandbox.reset` event.',
    examples: [{ removed, seeded: { categories: 3, pets: 6, orders: 1 } }],
  },
);
