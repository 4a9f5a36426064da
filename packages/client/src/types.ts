/**
 * The public type names, derived from the operations of the generated `schema.ts`. They read
 * each operation's request and response, so they hold whether the document inlines its schemas
 * or names them in `components`: regenerating changes nothing here.
 */
import type { components, operations } from './schema.js';

type Operation = keyof operations;
type Json<T> = T extends { content: { 'application/json': infer Body } } ? Body : never;
/** The JSON body of an operation's answer with this status. */
type Answer<Op extends Operation, Status extends keyof operations[Op]['responses']> = Json<
  operations[Op]['responses'][Status]
>;
/** The JSON body an operation takes. */
type RequestBody<Op extends Operation> = Json<NonNullable<operations[Op]['requestBody']>>;
/** An operation's query parameters. */
type Query<Op extends Operation> = NonNullable<operations[Op]['parameters']['query']>;
type Item<List> = List extends ReadonlyArray<infer T> ? T : never;

export type Pet = Answer<'createPet', 201>;
export type NewPet = RequestBody<'createPet'>;
export type PetUpdate = RequestBody<'updatePet'>;
export type PetStatus = Pet['status'];
export type ListPetsQuery = Omit<Query<'listPets'>, 'cursor'>;

export type Category = Answer<'createCategory', 201>;
export type NewCategory = RequestBody<'createCategory'>;
export type CategoryUpdate = RequestBody<'updateCategory'>;
export type ListCategoriesQuery = Omit<Query<'listCategories'>, 'cursor'>;

export type Order = Answer<'placeOrder', 201>;
export type NewOrder = RequestBody<'placeOrder'>;
export type OrderUpdate = RequestBody<'updateOrder'>;
export type OrderStatus = Order['status'];
export type ListOrdersQuery = Omit<Query<'listOrders'>, 'cursor'>;
export type Inventory = Answer<'getInventory', 200>;

/** What to send again to an endpoint after an outage, and what was queued. */
export type WebhookRecoverRequest = RequestBody<'recoverWebhook'>;
export type WebhookRecovery = Answer<'recoverWebhook', 202>;

/** What a reset of the test data removed and, with the sample, added. */
export type SandboxReset = Answer<'resetSandbox', 200>;

/** A message as `POST /messages` answers it (`queued`). */
export type QueuedMessage = Answer<'sendMessage', 202>;
/** A message as `GET /messages/{id}` reads it, with its progress. */
export type Message = Answer<'getMessage', 200>;
export type MessageStatus = Message['status'];
export type NewMessage = RequestBody<'sendMessage'>;

export type NewAccount = RequestBody<'createAccount'>;
export type CreatedAccount = Answer<'createAccount', 201>;
/** The account of the key, with its plan's limits and usage. */
export type Account = Answer<'getAccount', 200>;
export type Plan = Account['plan'];

/** A key as listed: no secret. */
export type ApiKey = Item<Answer<'listApiKeys', 200>>;
export type NewApiKey = RequestBody<'createApiKey'>;
/** A key as created: `key` is the secret, shown this once. */
export type CreatedApiKey = Answer<'createApiKey', 201>;

/** The service's Error body. */
export type ErrorBody = Answer<'createPet', 400>;

/** A webhook endpoint as read and listed: no secret. */
export type WebhookEndpoint = Answer<'getWebhook', 200>;
/** An endpoint as created or after `rotateSecret`: `secret` (`whsec_…`) is shown this once. */
export type WebhookEndpointWithSecret = Answer<'createWebhook', 201>;
export type NewWebhook = RequestBody<'createWebhook'>;
export type WebhookUpdate = RequestBody<'updateWebhook'>;
/** What an endpoint may subscribe to: an event type, or `*` for all. */
export type WebhookEventFilter = NewWebhook['events'][number];
/** One event's delivery to one endpoint (its id is the event's). */
export type WebhookDelivery = Answer<'testWebhook', 202>;
export type WebhookDeliveryStatus = WebhookDelivery['status'];
export type ListWebhookDeliveriesQuery = Omit<Query<'listWebhookDeliveries'>, 'cursor'>;

/** An API request of the account, as `requests.list` lists it. */
export type RequestLogEntry = Omit<
  Item<Answer<'listRequests', 200>>,
  'requestBody' | 'requestBodyTruncated' | 'errorBody'
>;
/** A request as `requests.get` reads it: with the bodies of a 4xx or 5xx (else null). */
export type RequestLogEntryDetail = Required<Answer<'getRequest', 200>>;
export type ListRequestsQuery = Omit<Query<'listRequests'>, 'cursor'>;
/** Requests per hour, split into 2xx, 4xx (429 apart), 5xx and 429. */
export type RequestStats = Answer<'getRequestStats', 200>;
export type RequestStatsPeriod = RequestStats['period'];

/** What happened: `pet.created`, `order.placed`, `message.sent`, … and `webhook.test`. */
export type EventType = components['schemas']['EventType'];
export type ListEventsQuery = Omit<Query<'listEvents'>, 'cursor'>;

/** The data of `message.sent` and `message.failed`: the message once settled. */
export type SettledMessage<Status extends 'sent' | 'failed' = 'sent' | 'failed'> = Omit<
  Message,
  'status' | 'failureReason' | 'webhooks'
> & {
  status: Status;
  /** Why delivery failed (`message.failed`); null when it was sent. */
  failureReason: string | null;
};

/** The data of `webhook.test`, sent by `webhooks.test()` to one endpoint. */
export interface WebhookTestData {
  webhookId: string;
  message: string;
}

/**
 * Each event type's `data`: the resource as the API shows it after the change (before it, for
 * a `….deleted`). A type the document adds later, unknown to this client, has `unknown` data.
 */
export type EventData<T extends EventType = EventType> = T extends `pet.${string}`
  ? Pet
  : T extends `order.${string}`
    ? Order
    : T extends 'message.sent'
      ? SettledMessage<'sent'>
      : T extends 'message.failed'
        ? SettledMessage<'failed'>
        : T extends 'message.deleted'
          ? SettledMessage
          : T extends 'webhook.test'
            ? WebhookTestData
            : T extends 'sandbox.reset'
              ? SandboxReset
              : T extends 'webhook_endpoint.disabled'
                ? WebhookEndpoint
                : unknown;

type EventFields = Omit<Item<Answer<'listEvents', 200>>, 'type' | 'data'>;

/**
 * An event, as `GET /v1/events` lists it and a webhook delivers it: a union discriminated by
 * `type`, so that `if (event.type === 'pet.created')` makes `event.data` a `Pet`.
 * `Event<'order.placed' | 'order.approved'>` is the events of those types.
 */
export type Event<T extends EventType = EventType> = {
  [K in T]: EventFields & { type: K; data: EventData<K> };
}[T];
