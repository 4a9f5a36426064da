import type { ApiPromise } from '../response.js';
import type { Message, QueuedMessage } from '../types.js';
import {
  type CallOptions,
  type CreateOptions,
  created,
  nothing,
  plain,
  type Requests,
  unwrap,
} from './context.js';

export interface MessagesResource {
  /** Queues a message (`POST /messages` on the messages server). */
  send(message: string, options?: CreateOptions): ApiPromise<QueuedMessage>;
  get(messageId: string, options?: CallOptions): ApiPromise<Message>;
  /** Removes the record of a settled message (sent or failed); one in flight is a ConflictError. */
  delete(messageId: string, options?: CallOptions): ApiPromise<void>;
}

export function messagesResource(requests: Requests): MessagesResource {
  const { messagesApi } = requests;
  return {
    send: (message, o) =>
      created(requests, (init) => messagesApi.POST('/messages', { body: { message }, ...init }), o),
    get: (messageId, o) =>
      unwrap(
        requests,
        messagesApi.GET('/messages/{messageId}', { params: { path: { messageId } }, ...plain(o) }),
      ),
    delete: (messageId, o) =>
      nothing(
        requests,
        messagesApi.DELETE('/messages/{messageId}', {
          params: { path: { messageId } },
          ...plain(o),
        }),
      ),
  };
}
