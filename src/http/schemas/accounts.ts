import { Type } from 'typebox';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from '../../domain/accounts.js';
import { PLANS } from '../../domain/plans.js';
import { Text } from './common.js';

const Email = Type.String({ format: 'email', maxLength: 254, description: 'Sign-in email.' });
const Timestamp = (description: string) => Type.String({ format: 'date-time', description });
const Plan = Type.Enum(PLANS, { description: 'Plan that sets the rate limits.' });
const Limits = Type.Object(
  {
    perMinute: Type.Integer({ description: 'Requests per UTC minute.' }),
    perDay: Type.Integer({ description: 'Requests per UTC day.' }),
  },
  { additionalProperties: false },
);

export const NewAccount = Type.Object(
  {
    email: Email,
    password: Type.String({
      minLength: PASSWORD_MIN_LENGTH,
      maxLength: PASSWORD_MAX_LENGTH,
      // A lone surrogate has no UTF-8 form: the hash would be of a different password.
      pattern: '^[^\\p{Cs}]*$',
      description: `At least ${PASSWORD_MIN_LENGTH} characters.`,
    }),
  },
  { title: 'NewAccount', additionalProperties: false },
);

export const CreatedAccount = Type.Object(
  {
    id: Type.String({ description: 'Account identifier (`acct_…`).' }),
    email: Email,
    plan: Plan,
    createdAt: Timestamp('Creation time (UTC).'),
  },
  { title: 'CreatedAccount', additionalProperties: false },
);

export const AccountView = Type.Object(
  {
    id: Type.String({ description: 'Account identifier (`acct_…`).' }),
    email: Email,
    plan: Plan,
    limits: Limits,
    usage: Type.Object(
      {
        minute: Type.Integer({ description: 'Requests counted in the current UTC minute.' }),
        day: Type.Integer({ description: 'Requests counted in the current UTC day.' }),
      },
      {
        additionalProperties: false,
        description: 'Requests counted against the limits so far, this one included.',
      },
    ),
    deprecatedCalls: Type.Integer({
      description: 'Calls this account made to deprecated operations (see `Deprecation` headers).',
    }),
  },
  { title: 'Account', additionalProperties: false },
);

export const ApiKeyView = Type.Object(
  {
    id: Type.String({ description: 'Key identifier (`key_…`), used to revoke it.' }),
    name: Type.Union([Type.String(), Type.Null()], { description: 'Label given at creation.' }),
    prefix: Type.String({ description: 'First characters of the key, to recognise it.' }),
    createdAt: Timestamp('Creation time (UTC).'),
    lastUsedAt: Type.Union([Timestamp('Last use (UTC, to the minute).'), Type.Null()]),
  },
  { title: 'ApiKey', additionalProperties: false },
);

export const CreatedApiKey = Type.Object(
  {
    id: ApiKeyView.properties.id,
    name: ApiKeyView.properties.name,
    key: Type.String({
      description: 'The secret key. Shown this once; only its hash is stored.',
    }),
    prefix: ApiKeyView.properties.prefix,
    createdAt: ApiKeyView.properties.createdAt,
  },
  { title: 'CreatedApiKey', additionalProperties: false },
);

export const NewApiKey = Type.Object(
  {
    name: Type.Optional(Text('A label, e.g. "ci" or "laptop".', 100)),
  },
  { title: 'NewApiKey', additionalProperties: false },
);

export const KeyParams = Type.Object({
  keyId: Type.String({
    minLength: 1,
    maxLength: 64,
    pattern: '^[A-Za-z0-9_]+$',
    description: 'Key identifier (`key_…`).',
  }),
});
