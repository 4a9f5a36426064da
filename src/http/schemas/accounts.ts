import { Type } from 'typebox';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from '../../domain/accounts.js';
import { MAX_LIVE_KEYS, MAX_ORIGIN_LENGTH, MAX_ORIGINS } from '../../domain/api-keys.js';
import { PLANS } from '../../domain/plans.js';
import { SCOPES } from '../../domain/scopes.js';
import { CARRIES_SECRET } from '../security-headers.js';
import {
  ClosedObject,
  Count,
  IdParam,
  NO_LONE_SURROGATES_PATTERN,
  StringEnum,
  TEXT_PATTERN,
  Text,
  Timestamp,
} from './common.js';

const Email = Type.String({ format: 'email', maxLength: 254, description: 'Sign-in email.' });
const AccountId = Type.String({
  maxLength: 64,
  pattern: '^acct_[A-Za-z0-9]+$',
  description: 'Account identifier (`acct_…`).',
});
const Plan = StringEnum(PLANS, {
  title: 'Plan',
  description: 'Plan that sets the rate limits: `free`, `pro`, `business` or `enterprise`.',
  examples: ['free'],
});
/** The limits are 32-bit integer columns. */
const PerWindow = (description: string) =>
  Type.Integer({ format: 'int32', minimum: 0, maximum: 2_147_483_647, description });
const Limits = ClosedObject(
  {
    perMinute: PerWindow('Requests per UTC minute.'),
    perDay: PerWindow('Requests per UTC day.'),
  },
  {
    title: 'Limits',
    description: 'The rate limits of the plan.',
    examples: [{ perMinute: 60, perDay: 1000 }],
  },
);
const Usage = ClosedObject(
  {
    minute: PerWindow('Requests counted in the current UTC minute.'),
    day: PerWindow('Requests counted in the current UTC day.'),
  },
  {
    title: 'Usage',
    description: 'Requests counted against the limits so far, this one included.',
    examples: [{ minute: 3, day: 41 }],
  },
);

const created = '2026-01-05T10:00:00.000Z';

export const NewAccount = ClosedObject(
  {
    email: Email,
    password: Type.String({
      minLength: PASSWORD_MIN_LENGTH,
      maxLength: PASSWORD_MAX_LENGTH,
      // A lone surrogate has no UTF-8 form: the hash would be of a different password.
      pattern: NO_LONE_SURROGATES_PATTERN,
      format: 'password',
      description: `At least ${PASSWORD_MIN_LENGTH} characters.`,
    }),
  },
  {
    title: 'NewAccount',
    description: 'Sign-up: the email and password you will manage keys with.',
    examples: [{ email: 'ada@example.com', password: 'correct horse battery' }],
  },
);

export const CreatedAccount = ClosedObject(
  {
    id: AccountId,
    email: Email,
    plan: Plan,
    createdAt: Timestamp('Creation time (UTC).'),
  },
  {
    title: 'CreatedAccount',
    description: 'The account just created, on the Free plan.',
    examples: [
      { id: 'acct_7Hq2LmN4pR8sT1vW', email: 'ada@example.com', plan: 'free', createdAt: created },
    ],
  },
);

export const AccountView = ClosedObject(
  {
    id: AccountId,
    email: Email,
    plan: Plan,
    limits: Limits,
    usage: Usage,
    deprecatedCalls: Count(
      'Calls this account made to deprecated operations (see `Deprecation` headers).',
    ),
  },
  {
    title: 'Account',
    description: 'Your account: plan, limits and what is used of them.',
    examples: [
      {
        id: 'acct_7Hq2LmN4pR8sT1vW',
        email: 'ada@example.com',
        plan: 'free',
        limits: { perMinute: 60, perDay: 1000 },
        usage: { minute: 3, day: 41 },
        deprecatedCalls: 0,
      },
    ],
  },
);

const KeyId = Type.String({
  maxLength: 64,
  pattern: '^key_[A-Za-z0-9]+$',
  description: 'Key identifier (`key_…`), used to revoke it.',
});
const KeyName = Type.Union(
  [
    Type.String({ maxLength: 100, pattern: TEXT_PATTERN, description: 'Label given at creation.' }),
    Type.Null(),
  ],
  { description: 'Label given at creation, or null.' },
);
const KeyPrefix = Type.String({
  maxLength: 16,
  pattern: '^as_(pk_)?(live|test)_[A-Za-z0-9]*$',
  description:
    'First characters of the key (its kind, `as_test_` say, and four more), to recognise it.',
});
const KeyType = StringEnum(['secret', 'publishable'], {
  description: '`secret`, or `publishable` (`as_pk_…`): reads the catalogue, from its origins.',
});
const Origin = Type.String({
  minLength: 8,
  maxLength: MAX_ORIGIN_LENGTH,
  pattern: '^https?://[^/?#@*\\s]+/?$',
  description: 'An origin, like `https://shop.example`.',
});
const AllowedOrigins = Type.Union([Type.Array(Origin, { maxItems: MAX_ORIGINS }), Type.Null()], {
  description: "A publishable key's origins; null for a secret key.",
});

export const Scope = StringEnum(SCOPES, {
  title: 'Scope',
  description:
    'What a restricted key may do: `<resource>:read` or `<resource>:write`; `write` implies ' +
    '`read` of the same resource.',
  examples: ['pets:read'],
});
const KeyScopes = Type.Union([Type.Array(Scope, { maxItems: SCOPES.length }), Type.Null()], {
  description:
    "The key's scopes, or null for a key with full access (every scope, those added later too).",
});

const keyExample = {
  id: 'key_3kTn8WqZ2bXc5VdR',
  name: 'ci',
  type: 'secret',
  prefix: 'as_test_Zq4x',
  scopes: null,
  allowedOrigins: null,
  createdAt: created,
  lastUsedAt: '2026-01-05T10:02:00.000Z',
};

export const ApiKeyView = ClosedObject(
  {
    id: KeyId,
    name: KeyName,
    type: KeyType,
    prefix: KeyPrefix,
    scopes: KeyScopes,
    allowedOrigins: AllowedOrigins,
    createdAt: Timestamp('Creation time (UTC).'),
    lastUsedAt: Type.Union([Timestamp('Last use (UTC, to the minute).'), Type.Null()], {
      description: 'Last use (UTC, to the minute), or null if never used.',
    }),
  },
  {
    title: 'ApiKey',
    description: 'A live API key, without its secret.',
    examples: [keyExample],
  },
);

export const ApiKeyList = Type.Array(ApiKeyView, {
  title: 'ApiKeyList',
  maxItems: MAX_LIVE_KEYS,
  description: `The live keys of the account (at most ${MAX_LIVE_KEYS}), oldest first.`,
  examples: [[keyExample]],
});

export const CreatedApiKey = ClosedObject(
  {
    id: KeyId,
    name: KeyName,
    type: KeyType,
    key: Type.String({
      maxLength: 139,
      pattern: '^as_(pk_)?(live|test)_[A-Za-z0-9]{32,128}$',
      format: 'password',
      description:
        'The secret key: send it as `Authorization: Bearer <key>`. Shown in this answer only ' +
        '(and to a retry of this request with its Idempotency-Key, for 24 hours); the key ' +
        'itself is stored only as a hash.',
    }),
    prefix: KeyPrefix,
    scopes: KeyScopes,
    allowedOrigins: AllowedOrigins,
    createdAt: Timestamp('Creation time (UTC).'),
  },
  {
    title: 'NewApiKey',
    [CARRIES_SECRET]: true,
    description:
      'A key just created, with its secret: the one answer that shows it (a retry with the ' +
      "request's Idempotency-Key gets this answer again).",
    examples: [
      {
        id: 'key_3kTn8WqZ2bXc5VdR',
        name: 'ci',
        type: 'secret',
        key: 'as_test_Zq4xR7mK2pL9sW3vB6nH8jT1cY5dF0gQ4eA2uI7o',
        prefix: 'as_test_Zq4x',
        scopes: ['pets:read', 'orders:write'],
        allowedOrigins: null,
        createdAt: created,
      },
    ],
  },
);

export const NewApiKey = ClosedObject(
  {
    name: Type.Optional(Text('A label, e.g. "ci" or "laptop" (1 to 100 characters).', 100)),
    scopes: Type.Optional(
      Type.Array(Scope, {
        minItems: 1,
        maxItems: SCOPES.length,
        description:
          'Restricts the key to these scopes (least privilege). Left out, the key has full ' +
          'access to the account. Not for a publishable key.',
      }),
    ),
    type: Type.Optional(KeyType),
    allowedOrigins: Type.Optional(
      Type.Array(Origin, {
        minItems: 1,
        maxItems: MAX_ORIGINS,
        description: `A publishable key's origins (1 to ${MAX_ORIGINS}): only they may use it.`,
      }),
    ),
  },
  {
    title: 'ApiKeyRequest',
    description: 'The key to create; the body may be left out.',
    examples: [{ name: 'ci', scopes: ['pets:read', 'orders:write'] }],
  },
);

export const KeyParams = Type.Object({ keyId: IdParam('Key identifier (`key_…`).') });
