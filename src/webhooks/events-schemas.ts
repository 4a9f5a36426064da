import { Type } from 'typebox';
import {
  ClosedObject,
  ListQuery,
  Page,
  StringEnum,
  Text,
  Timestamp,
} from '../http/schemas/common.js';
import { EVENT_TYPES, TEST_EVENT_TYPE } from './events.js';

export const EventType = StringEnum([...EVENT_TYPES, TEST_EVENT_TYPE], {
  title: 'EventType',
  examples: ['pet.created'],
  description:
    'What happened: `pet.created`, `pet.updated`, `pet.deleted`, `order.placed`, ' +
    '`order.approved`, `order.delivered`, `order.cancelled`, `message.sent`, `message.failed`; ' +
    '`webhook.test` for a test sent to one endpoint.',
});

export const EventId = Type.String({
  maxLength: 24,
  pattern: '^evt_[0-9A-Za-z]{20}$',
  description: 'The event id (`evt_…`); ids sort by time.',
});

const EVENT_EXAMPLE = {
  id: 'evt_0aBcDeF0001xYz12AbCd',
  type: 'pet.created',
  createdAt: '2026-11-24T12:00:00.000Z',
  data: { id: 1, name: 'Rex', categoryId: 1, status: 'available' },
};

export const Event = ClosedObject(
  {
    id: EventId,
    type: EventType,
    createdAt: Timestamp('When it happened (UTC).'),
    data: Type.Unknown({
      description:
        'The resource as the API shows it after the change (before it, for `pet.deleted`): ' +
        'a Pet, an Order or a Message.',
    }),
  },
  {
    title: 'Event',
    description: 'Also the body of every webhook delivery.',
    examples: [EVENT_EXAMPLE],
  },
);

/** The `data` of a `webhook.test` event (`POST /v1/webhooks/{id}/test`). */
export const WebhookTestData = ClosedObject(
  {
    webhookId: Type.String({
      maxLength: 64,
      pattern: '^[A-Za-z0-9_]+$',
      description: 'The endpoint it was sent to (`we_…`).',
    }),
    message: Text('A line saying what it is.'),
  },
  {
    title: 'WebhookTestData',
    description: 'A test event, sent to one endpoint.',
    examples: [{ webhookId: 'we_0aBcDeFgHiJkLmNoPq', message: 'A test event from Animal Store.' }],
  },
);

/** A page of events. */
export const EventPage = Page(Event, { title: 'EventPage', examples: [[EVENT_EXAMPLE]] });

export const EventListQuery = ListQuery({ type: Type.Optional(EventType) });
