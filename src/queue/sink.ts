import type { FastifyBaseLogger } from 'fastify';
import type { Message } from '../domain/messages.js';

/**
 * Where a message is "sent". Delivery is at least once into the sink: a worker that dies after
 * `deliver` resolves but before the row says `sent` leaves the message to be delivered again,
 * so a sink with side effects should de-duplicate on `message.id`.
 */
export interface MessageSink {
  deliver(message: Message): Promise<void>;
}

/** The default sink: writes the message to the log and succeeds. The log writes synchronously
 * (src/log.ts), so the line is out before the row is settled `sent`. */
export class LogSink implements MessageSink {
  constructor(private readonly log: FastifyBaseLogger) {}

  async deliver(message: Message): Promise<void> {
    this.log.info({ messageId: message.id, message: message.message }, 'message sent');
  }
}
