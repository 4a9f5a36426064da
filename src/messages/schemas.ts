import { Type } from 'typebox';
import {
  ClosedObject,
  IdParam,
  STORABLE_TEXT_PATTERN,
  StringEnum,
  Timestamp,
} from '../http/schemas/common.js';
import { MAX_ENDPOINTS } from '../webhooks/domain.js';
import { MESSAGE_MAX_LENGTH, MESSAGE_STATUSES } from './domain.js';

const Id = Type.String({
  maxLength: 64,
  pattern: '^msg_[A-Za-z0-9]+$',
  description: 'Identifier of the message record (`msg_…`).',
});
const Text = Type.String({
  minLength: 1,
  maxLength: MESSAGE_MAX_LENGTH,
  // NUL cannot be stored, a lone surrogate cannot be encoded; everything else is the sender's.
  pattern: STORABLE_TEXT_PATTERN,
  description: `The text, 1 to ${MESSAGE_MAX_LENGTH} characters.`,
});
const Status = StringEnum(MESSAGE_STATUSES, {
  title: 'MessageStatus',
  description:
    '`queued` (accepted, not processed yet) → `processing` → `sent`; `failed` after the last retry.',
  examples: ['queued'],
});
const CreatedAt = Timestamp('Creation time (UTC, `Z`).');

const queued = {
  id: 'msg_0Lxq7GZ1aB3cD',
  message: 'Hello, store!',
  status: 'queued',
  createdAt: '2026-01-05T10:00:00.000Z',
} as const;

export const NewMessage = ClosedObject(
  { message: Text },
  {
    title: 'NewMessage',
    description: 'A message to queue.',
    examples: [{ message: 'Hello, store!' }],
  },
);

export const QueuedMessage = ClosedObject(
  { id: Id, message: Text, status: Status, createdAt: CreatedAt },
  {
    title: 'Message',
    description: 'The answer to `POST /messages`: the record as accepted, `queued`.',
    examples: [queued],
  },
);

// A message has one settled event, delivered at most once per endpoint of the account.
const Count = (description: string) =>
  Type.Integer({ format: 'int32', minimum: 0, maximum: MAX_ENDPOINTS, description });

export const WebhookDeliveryState = ClosedObject(
  {
    pending: Count('Not delivered yet: waiting for a first try, being sent, or to be retried.'),
    delivered: Count('Answered with a 2xx.'),
    failed: Count('Given up on after the retry period.'),
  },
  {
    title: 'WebhookDeliveryState',
    description:
      "Where the deliveries of this message's `message.sent` or `message.failed` event to the " +
      "account's webhook endpoints stand. All zero while the message is not settled, and when " +
      'no endpoint wants the event.',
    examples: [{ pending: 0, delivered: 1, failed: 0 }],
  },
);

export const MessageRecord = ClosedObject(
  {
    id: Id,
    message: Text,
    status: Status,
    createdAt: CreatedAt,
    updatedAt: Timestamp('Last status change (UTC).'),
    failureReason: Type.Optional(
      Type.String({ maxLength: 1024, description: 'Why delivery failed; only on `failed`.' }),
    ),
    webhooks: WebhookDeliveryState,
  },
  {
    title: 'MessageRecord',
    description: 'A message as it stands now.',
    examples: [
      {
        ...queued,
        status: 'sent',
        updatedAt: '2026-01-05T10:00:00.120Z',
        webhooks: { pending: 0, delivered: 1, failed: 0 },
      },
    ],
  },
);

/** A message's record in its `message.sent` and `message.failed` events (src/messages/processor.ts). */
export const MessageEventData = ClosedObject(
  {
    id: Id,
    message: Text,
    status: StringEnum(['sent', 'failed'], { description: 'How it settled.' }),
    createdAt: CreatedAt,
    updatedAt: Timestamp('When it settled (UTC).'),
    failureReason: Type.Union(
      [Type.String({ maxLength: 1024, pattern: STORABLE_TEXT_PATTERN }), Type.Null()],
      {
        description: 'Why delivery failed (`failed`); null when sent.',
      },
    ),
  },
  {
    title: 'MessageEventData',
    description: 'The message as it settled.',
    examples: [
      { ...queued, status: 'sent', updatedAt: '2026-01-05T10:00:00.120Z', failureReason: null },
    ],
  },
);

export const MessageParams = Type.Object({
  messageId: IdParam('Identifier of the message record (`msg_…`).'),
});
