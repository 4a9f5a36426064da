/**
 * The public type names, derived from the operations of the generated `schema.ts`. They read
 * each operation's request and response, so they hold whether the document inlines its schemas
 * or names them in `components`: regenerating changes nothing here.
 */
import type { operations } from './schema.js';

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
