import { Type } from 'typebox';
import {
  ClosedObject,
  Count,
  IdParam,
  ListQuery,
  Page,
  StringEnum,
  Timestamp,
} from '../http/schemas/common.js';
import { CARRIES_SECRET } from '../http/security-headers.js';
import { DELIVERY_STATUSES, MAX_ENDPOINTS } from './domain.js';
// No titles yet: a titled schema must be a component of the document
// (src/http/openapi-document.ts, COMPONENTS), with its examples; until these are listed there
// they are written inline.
import { EVENT_TYPES } from './events.js';
import { EventId, EventType } from './events-schemas.js';

const Url = Type.String({
  examples: ['https://example.com/hooks/animal-store'],
  minLength: 1,
  maxLength: 2048,
  format: 'uri',
  description:
    'Where events are POSTed. `https` only outside development; a host that resolves to a ' +
    'loopback, private, link-local or metadata address is refused (in development, `http` ' +
    'and loopback addresses are allowed).',
});

const Events = Type.Array(StringEnum([...EVENT_TYPES, '*']), {
  minItems: 1,
  maxItems: EVENT_TYPES.length + 1,
  description: 'The event types to send; `["*"]` for all, including types added later.',
});

export const WebhookId = IdParam('The endpoint id (`we_…`).');

const endpointFields = {
  id: WebhookId,
  url: Type.String({ format: 'uri', maxLength: 2048, description: 'Where events are POSTed.' }),
  events: Type.Array(StringEnum([...EVENT_TYPES, '*']), {
    maxItems: EVENT_TYPES.length + 1,
    description: 'The event types sent, or `["*"]`.',
  }),
  enabled: Type.Boolean({
    description: 'Whether events are sent. The service disables an endpoint that kept failing.',
  }),
  disabledReason: Type.Union(
    [Type.String({ maxLength: 500, pattern: '^[^\\u0000]*$' }), Type.Null()],
    {
      description: 'Why the service disabled it (it kept failing), or null.',
    },
  ),
  createdAt: Timestamp('Creation time (UTC).'),
  updatedAt: Timestamp('Last change (UTC).'),
};

const ENDPOINT_EXAMPLE = {
  id: 'we_0aBcDeFgHiJkLmNoPqRs',
  url: 'https://example.com/hooks/animal-store',
  events: ['pet.created', 'order.placed'],
  enabled: true,
  disabledReason: null,
  createdAt: '2026-11-24T12:00:00.000Z',
  updatedAt: '2026-11-24T12:00:00.000Z',
};

export const WebhookEndpoint = ClosedObject(endpointFields, {
  title: 'WebhookEndpoint',
  examples: [ENDPOINT_EXAMPLE],
});

export const WebhookEndpointList = Type.Array(WebhookEndpoint, {
  title: 'WebhookEndpointList',
  maxItems: MAX_ENDPOINTS,
  examples: [[ENDPOINT_EXAMPLE]],
});

export const WebhookEndpointWithSecret = ClosedObject(
  {
    ...endpointFields,
    secret: Type.String({
      maxLength: 64,
      pattern: '^whsec_[0-9A-Za-z]+$',
      description:
        'The signing secret (`whsec_…`), shown in this answer only (and to a retry of this ' +
        'request with its Idempotency-Key): keep it to verify the `Animal-Store-Signature` ' +
        'header.',
    }),
  },
  {
    title: 'WebhookEndpointWithSecret',
    [CARRIES_SECRET]: true,
    examples: [{ ...ENDPOINT_EXAMPLE, secret: 'whsec_0aBcDeFgHiJkLmNoPqRsTuVwXyZ01234' }],
  },
);

export const NewWebhook = ClosedObject(
  { url: Url, events: Events },
  {
    title: 'NewWebhook',
    description: `An account may have ${MAX_ENDPOINTS} endpoints.`,
    examples: [{ url: 'https://example.com/hooks/animal-store', events: ['*'] }],
  },
);

export const WebhookPatch = ClosedObject(
  {
    url: Type.Optional(Url),
    events: Type.Optional(Events),
    enabled: Type.Optional(
      Type.Boolean({ description: 'Enabling again forgives its past failures.' }),
    ),
  },
  { title: 'WebhookPatch', examples: [{ enabled: true }] },
);

export const WebhookParams = Type.Object({ webhookId: WebhookId });

export const DeliveryParams = Type.Object({
  webhookId: WebhookId,
  deliveryId: IdParam("The delivery's id: its event's id (an endpoint gets each event once)."),
});

const DELIVERY_EXAMPLE = {
  id: 'evt_0aBcDeF0001xYz12AbCd',
  eventType: 'pet.created',
  status: 'delivered',
  attempts: 1,
  lastStatusCode: 200,
  lastResponse: 'ok',
  lastAttemptAt: '2026-11-24T12:00:01.000Z',
  nextAttemptAt: null,
  createdAt: '2026-11-24T12:00:00.000Z',
};

export const WebhookDelivery = ClosedObject(
  {
    id: EventId,
    eventType: EventType,
    status: StringEnum(DELIVERY_STATUSES, {
      description:
        '`pending` (due, being sent, or waiting to be tried again), `delivered` (a 2xx ' +
        'answer), `failed` (no 2xx within the retry period).',
    }),
    attempts: Type.Integer({
      format: 'int32',
      minimum: 0,
      maximum: 1_000_000,
      description: 'Attempts so far.',
    }),
    lastStatusCode: Type.Union(
      [Type.Integer({ format: 'int32', minimum: 100, maximum: 599 }), Type.Null()],
      {
        description: "The last attempt's HTTP status, or null (none yet, or no answer).",
      },
    ),
    lastResponse: Type.Union(
      [Type.String({ maxLength: 1024, pattern: '^[^\\u0000]*$' }), Type.Null()],
      {
        description:
          "The first 1 KB of the last answer's body as text (invalid UTF-8 and NUL shown as " +
          'U+FFFD), or why there was no answer.',
      },
    ),
    lastAttemptAt: Type.Union([Timestamp('When.'), Type.Null()]),
    nextAttemptAt: Type.Union([Timestamp('When, while pending.'), Type.Null()]),
    createdAt: Timestamp('When the event was written.'),
  },
  { title: 'WebhookDelivery', examples: [DELIVERY_EXAMPLE] },
);

/** A page of deliveries. */
export const DeliveryPage = Page(WebhookDelivery, {
  title: 'WebhookDeliveryPage',
  examples: [[DELIVERY_EXAMPLE]],
});

export const DeliveryListQuery = ListQuery({});

export const RecoverRequest = ClosedObject(
  {
    since: Type.String({
      format: 'date-time',
      maxLength: 32,
      description: 'Events written at or after this time (within the last 30 days).',
    }),
    include: Type.Optional(
      StringEnum(['failed', 'all'], {
        description:
          '`failed` (the default): the deliveries that failed. `all`: every event of the ' +
          "endpoint's types, sent before or not.",
      }),
    ),
  },
  {
    title: 'WebhookRecoverRequest',
    description: 'What to send again to the endpoint.',
    examples: [{ since: '2026-11-28T09:00:00.000Z', include: 'failed' }],
  },
);

export const Recovery = ClosedObject(
  {
    queued: Count('Deliveries put in line: follow them in the delivery log.'),
    more: Type.Boolean({
      description: 'True when this call stopped at 10,000: call it again for the rest.',
    }),
  },
  {
    title: 'WebhookRecovery',
    description: "A recovery's deliveries, in line to be sent under the dispatcher's caps.",
    examples: [{ queued: 42, more: false }],
  },
);
