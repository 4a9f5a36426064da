import type { Message, QueuedMessage } from '../types.js';
import {
  type CallOptions,
  type CreateOptions,
  plain,
  post,
  type Requests,
  unwrap,
} from './context.js';

export interface MessagesResource {
  /** Queues a message (`POST /messages` on the messages server). */
  send(message: string, options?: CreateOptions): Promise<QueuedMessage>;
  get(messageId: string, options?: CallOptions): Promise<Message>;
}

export function messagesResource({ messagesApi }: Requests): MessagesResource {
  return {
    send: (message, o) => unwrap(messagesApi.POST('/messages', { body: { message }, ...post(o) })),
    get: (messageId, o) =>
      unwrap(
        messagesApi.GET('/messages/{messageId}', { params: { path: { messageId } }, ...plain(o) }),
      ),
  };
}
