import { Type } from 'typebox';
import { MESSAGE_MAX_LENGTH, MESSAGE_STATUSES } from '../../domain/messages.js';

const Id = Type.String({ description: 'Identifier of the message record (`msg_…`).' });
const Text = Type.String({
  minLength: 1,
  maxLength: MESSAGE_MAX_LENGTH,
  // NUL cannot be stored, a lone surrogate cannot be encoded; everything else is the sender's.
  pattern: '^[^\\u0000\\p{Cs}]*$',
  description: `The text, 1 to ${MESSAGE_MAX_LENGTH} characters.`,
});
const Status = Type.Enum(MESSAGE_STATUSES, {
  description:
    '`queued` (accepted, not processed yet) → `processing` → `sent`; `failed` after the last retry.',
});
const CreatedAt = Type.String({ format: 'date-time', description: 'Creation time (UTC, `Z`).' });

export const NewMessage = Type.Object(
  { message: Text },
  { title: 'NewMessage', additionalProperties: false },
);

export const QueuedMessage = Type.Object(
  { id: Id, message: Text, status: Status, createdAt: CreatedAt },
  { title: 'Message', additionalProperties: false },
);

export const MessageRecord = Type.Object(
  {
    id: Id,
    message: Text,
    status: Status,
    createdAt: CreatedAt,
    updatedAt: Type.String({ format: 'date-time', description: 'Last status change (UTC).' }),
    failureReason: Type.Optional(
      Type.String({ description: 'Why delivery failed; only on `failed`.' }),
    ),
  },
  { title: 'MessageRecord', additionalProperties: false },
);

export const MessageParams = Type.Object({
  messageId: Type.String({
    minLength: 1,
    maxLength: 64,
    // Ours are `msg_` and base62: anything else is no id (and a NUL is not even text to
    // PostgreSQL).
    pattern: '^[A-Za-z0-9_]+$',
    description: 'Identifier of the message record (`msg_…`).',
  }),
});
