import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { until } from '../../../test/helpers.js';
import {
  type AnimalStoreClient,
  ConflictError,
  constructWebhookEvent,
  createClient,
  type Event,
  generateWebhookTestHeaders,
  NotFoundError,
  type Pet,
  VERSION,
} from '../src/index.js';
import {
  type ForwardingServer,
  type Live,
  live,
  proxy,
  type Received,
  type Receiver,
  receiver,
} from './live.js';

/**
 * The five signature headers of a real delivery, beside what `generateWebhookTestHeaders` makes
 * of its body, time and id with these secrets: they must be the same.
 */
async function signedAlike(delivery: Received, secret: string | string[]) {
  const sent = delivery.headers;
  const made = await generateWebhookTestHeaders({
    payload: delivery.body,
    secret,
    timestamp: Number(sent['webhook-timestamp']),
    eventId: String(sent['webhook-id']),
  });
  const names = Object.keys(made) as Array<keyof typeof made>;
  return { sent: Object.fromEntries(names.map((name) => [name, sent[name]])), made };
}

/** Short webhook back-off and polling, so deliveries take milliseconds. */
const FAST = { WEBHOOK_RETRY_BASE_MS: '30', WEBHOOK_RETRY_MAX_MS: '200', WEBHOOK_POLL_MS: '20' };

describe('events and webhooks as resources, against a live server', () => {
  let server: Live;
  let hooks: Receiver;
  let gateway: ForwardingServer;
  const agents: Array<string | undefined> = [];
  let client: AnimalStoreClient;
  before(async () => {
    // A store of its own: another suite's dispatcher must not take these deliveries.
    server = await live({ env: FAST, ownStore: true });
    hooks = await receiver();
    gateway = await proxy(server.origin, (req) => {
      agents.push(req.headers['user-agent']);
      return false;
    });
    const tenant = await server.tenant();
    client = createClient({ apiKey: tenant.key, baseUrl: gateway.origin });
  });
  after(async () => {
    await gateway?.close();
    await hooks?.close();
    await server?.close();
  });

  it('lists events oldest first, typed by their type, through every page', async () => {
    const category = await client.categories.create({ name: 'Dogs' });
    const rex = await client.pets.create({ name: 'Rex', categoryId: category.id });
    const renamed = await client.pets.update(rex.id, { name: 'Rex II' });
    const order = await client.store.orders.create({ petId: rex.id });

    const events = await client.events.list({ limit: 1 }).toArray();
    assert.deepEqual(
      events.map((event) => event.type),
      // The order makes the pet pending: a pet.updated of its own.
      ['pet.created', 'pet.updated', 'order.placed', 'pet.updated'],
    );
    const pets: Pet[] = [];
    for (const event of events) {
      // Narrowed by `type`: `data` is a Pet here, an Order there.
      if (event.type === 'pet.created' || event.type === 'pet.updated') pets.push(event.data);
      if (event.type === 'order.placed') assert.deepEqual(event.data, order);
      assert.match(event.id, /^evt_/);
    }
    assert.deepEqual(pets, [rex, renamed, { ...renamed, status: 'pending' }]);

    const created = await client.events.list({ type: 'pet.created' }).toArray();
    const typed: Array<Event<'pet.created'>> = created;
    assert.deepEqual(
      typed.map((event) => event.data.name),
      ['Rex'],
    );
    assert.ok(
      agents.every(
        (agent) => agent === `animal-store-client/${VERSION} node/${process.versions.node}`,
      ),
      `User-Agent: ${agents[0]}`,
    );
  });

  it('creates, reads, changes, tests, retries, rotates and deletes an endpoint', async () => {
    const endpoint = await client.webhooks.create({
      url: `${hooks.origin}/hooks`,
      events: ['pet.created'],
    });
    assert.match(endpoint.id, /^we_/);
    assert.match(endpoint.secret, /^whsec_/);
    const { secret: _, ...shown } = endpoint;
    assert.deepEqual(await client.webhooks.get(endpoint.id), shown);
    assert.deepEqual(await client.webhooks.list().toArray(), [shown]);

    const category = await client.categories.create({ name: 'Cats' });
    const tom = await client.pets.create({ name: 'Tom', categoryId: category.id });
    await until(() => hooks.received.length >= 1, 'the pet.created delivery');
    const [delivery] = hooks.received;
    assert.ok(delivery);
    // The raw body and the header as Node gives them (string | string[] | undefined).
    const event = await constructWebhookEvent(
      delivery.body,
      delivery.headers['animal-store-signature'],
      endpoint.secret,
    );
    assert.ok(event.type === 'pet.created');
    assert.deepEqual(event.data, tom);
    await assert.rejects(
      constructWebhookEvent(delivery.body, delivery.headers['animal-store-signature'], 'whsec_x'),
      { name: 'WebhookSignatureError', reason: 'bad_signature' },
    );
    // The test-signing helper signs as the service did, every header of it.
    const alike = await signedAlike(delivery, endpoint.secret);
    assert.deepEqual(alike.sent, alike.made);

    const changed = await client.webhooks.update(endpoint.id, { events: ['*'] });
    assert.deepEqual(changed.events, ['*']);

    const test = await client.webhooks.test(endpoint.id);
    assert.equal(test.eventType, 'webhook.test');
    await until(() => hooks.received.length >= 2, 'the webhook.test delivery');
    const second = hooks.received[1];
    assert.ok(second);
    const testEvent = await constructWebhookEvent(
      second.body,
      second.headers['animal-store-signature'],
      endpoint.secret,
    );
    assert.ok(testEvent.type === 'webhook.test');
    assert.equal(testEvent.data.webhookId, endpoint.id);

    // Newest first; a page of one, so the walk follows Link.
    const walked = await client.webhooks.deliveries(endpoint.id, { limit: 1 }).toArray();
    assert.deepEqual(
      walked.map((d) => d.eventType),
      ['webhook.test', 'pet.created'],
    );
    await until(
      async () =>
        (await client.webhooks.deliveries(endpoint.id).toArray()).every(
          (d) => d.status === 'delivered',
        ),
      'both delivered',
    );
    const again = await client.webhooks.retry(endpoint.id, event.id);
    assert.deepEqual([again.id, again.status], [event.id, 'pending']);
    await until(() => hooks.received.length >= 3, 'the delivery sent again');
    assert.deepEqual(hooks.received[2]?.body, delivery.body, 'the same event, again');
    const rotated = await client.webhooks.rotateSecret(endpoint.id);
    assert.notEqual(rotated.secret, endpoint.secret);
    // For a day deliveries are signed with both: either secret verifies the next one.
    await client.webhooks.test(endpoint.id);
    await until(() => hooks.received.length >= 4, 'a delivery after the rotation');
    const fourth = hooks.received[3];
    assert.ok(fourth);
    for (const key of [endpoint.secret, rotated.secret]) {
      const signed = fourth.headers['animal-store-signature'];
      assert.equal((await constructWebhookEvent(fourth.body, signed, key)).type, 'webhook.test');
    }
    // The new secret first, then the previous, as the service signs during the day after.
    const rotation = await signedAlike(fourth, [rotated.secret, endpoint.secret]);
    assert.deepEqual(rotation.sent, rotation.made);

    const sentBefore = hooks.received.length;
    // Every event of its types since before the first: all of them go again.
    const recovered = await client.webhooks.recover(endpoint.id, {
      since: new Date(Date.now() - 60_000).toISOString(),
      include: 'all',
    });
    assert.equal(recovered.more, false);
    assert.ok(recovered.queued >= 2, `${recovered.queued} queued`);
    await until(() => hooks.received.length >= sentBefore + recovered.queued, 'the recovery sent');

    await client.webhooks.delete(endpoint.id);
    await assert.rejects(client.webhooks.get(endpoint.id), NotFoundError);
    await assert.rejects(client.webhooks.retry(endpoint.id, event.id), NotFoundError);
    assert.deepEqual(await client.webhooks.list().toArray(), []);
  });

  it('removes an ended order, and refuses an open one as a ConflictError', async () => {
    const category = await client.categories.create({ name: 'Cats' });
    const tom = await client.pets.create({ name: 'Tom', categoryId: category.id });
    const order = await client.store.orders.create({ petId: tom.id });
    const open = await client.store.orders.delete(order.id).then(
      () => undefined,
      (error: unknown) => error,
    );
    assert.ok(open instanceof ConflictError, String(open));
    assert.equal(open.code, 'order_open');
    await client.store.orders.update(order.id, { status: 'cancelled' });
    const { data, response } = await client.store.orders.delete(order.id).withResponse();
    assert.equal(data, undefined);
    assert.equal(response.status, 204);
    const gone = await client.store.orders.get(order.id).then(
      () => undefined,
      (error: unknown) => error,
    );
    assert.ok(gone instanceof NotFoundError);
    await client.pets.delete(tom.id);
    await client.categories.delete(category.id);
  });

  it('resets the test data, with the sample, once for a retried key', async () => {
    const before = await client.events.list().toArray();
    const reset = await client.sandbox.reset({ seed: 'sample' }, { idempotencyKey: 'reset-once' });
    assert.deepEqual(reset.seeded, { categories: 3, pets: 6, orders: 1 });
    assert.ok(reset.removed.events >= before.length);
    const again = await client.sandbox.reset({ seed: 'sample' }, { idempotencyKey: 'reset-once' });
    assert.equal(again.lastResponse.idempotentReplayed, true);
    assert.deepEqual(await client.store.inventory(), { available: 4, pending: 1, sold: 1 });
    const [first] = await client.events.list().toArray();
    assert.equal(first?.type, 'sandbox.reset');
    if (first?.type === 'sandbox.reset') assert.deepEqual(first.data, { ...reset });
  });
});
