import type { FastifyBaseLogger } from 'fastify';
import type { Message } from './domain.js';

/**
 * Where a message is "sent". Delivery is at least once into the sink: a worker that dies after
 * `deliver` resolves but before the row says `sent` leaves the message to be delivered again,
 * so a sink with side effects should de-duplicate on `message.id`.
 */
export interface MessageSink {
  /** Delivers `message`, of the account `accountId`; resolves once it is delivered. */
  deliver(message: Message, accountId: string): Promise<void>;
}

/**
 * The default sink. A message goes out as the `message.sent` event its settle writes (the
 * outbox), to the account's webhook endpoints that want it; to an account with none, it goes
 * to the log, as a line written synchronously (src/log.ts), so it is out before the row is
 * settled `sent`. Either way the sink succeeds: the delivery to endpoints is the dispatcher's.
 */
export class LogSink implements MessageSink {
  /**
   * The answers asked for in this turn of the event loop, by account: a worker hands a batch's
   * messages over in one turn, so an account's are answered by one read (not a cache: the map
   * is emptied at the next turn).
   */
  private readonly asked = new Map<string, Promise<boolean>>();

  constructor(
    private readonly log: FastifyBaseLogger,
    /** Whether the account has an endpoint that wants `message.sent`. */
    private readonly subscribed: (accountId: string) => Promise<boolean> = async () => false,
  ) {}

  async deliver(message: Message, accountId: string): Promise<void> {
    if (await this.subscribedNow(accountId)) return;
    this.log.info({ messageId: message.id, message: message.message }, 'message sent');
  }

  private subscribedNow(accountId: string): Promise<boolean> {
    let answer = this.asked.get(accountId);
    if (answer === undefined) {
      if (this.asked.size === 0) setImmediate(() => this.asked.clear());
      answer = this.subscribed(accountId);
      this.asked.set(accountId, answer);
    }
    return answer;
  }
}
