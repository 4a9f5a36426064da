import assert from 'node:assert/strict';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/store/database.js';
import { guardedLookup, refusedAddress, refusedUrl } from '../src/webhooks/address.js';
import {
  addEndpoint,
  as,
  CHEAP_HASHES,
  captureLog,
  createCategory,
  createPet,
  errorCode,
  FAST,
  newTenant,
  nextLinkUrl,
  pathOf,
  sqliteDatabaseUrl,
  startApp,
  type Tenant,
  type TestApp,
  until,
} from './helpers.js';

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A receiver on 127.0.0.1: records every request; answers what `answer` says (200 by default). */
class Receiver {
  readonly received: Received[] = [];
  answer: (request: Received, n: number) => number = () => 200;
  private server: Server | undefined;
  url = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const got = {
          path: req.url ?? '',
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        };
        this.received.push(got);
        const status = this.answer(got, this.received.length);
        res.writeHead(status, { 'content-type': 'text/plain' }).end(`answer ${status}`);
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  of(path: string): Received[] {
    return this.received.filter((r) => r.path === path);
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server?.closeAllConnections();
      this.server?.close(() => resolve());
    });
  }
}

/** Waits until `check` holds (polled), or fails after `timeoutMs`. */

/** The receiver's side of the signature: Stripe's scheme, with node:crypto alone. */
function verifySignature(secret: string, header: string, body: string, toleranceS = 300): boolean {
  const parts = header.split(',').map((part) => part.split('=', 2) as [string, string]);
  const t = Number(parts.find(([k]) => k === 't')?.[1]);
  if (!Number.isInteger(t) || Math.abs(Date.now() / 1000 - t) > toleranceS) return false;
  const expected = createHmac('sha256', secret).update(`${t}.${body}`).digest();
  return parts.some(
    ([k, v]) =>
      k === 'v1' &&
      v.length === expected.length * 2 &&
      timingSafeEqual(Buffer.from(v, 'hex'), expected),
  );
}

describe('events and webhooks', () => {
  let t: TestApp;
  let app: FastifyInstance;
  let receiver: Receiver;

  before(async () => {
    t = await startApp({ env: FAST, ownStore: true });
    app = t.app;
    await app.ready();
    receiver = await new Receiver().start();
  });
  after(async () => {
    await t.close();
    await receiver.close();
  });

  describe('GET /v1/events', () => {
    it('lists the changes of pets and orders, oldest first, with pages and a type filter', async () => {
      const tenant = await newTenant(app);
      const category = await createCategory(app, tenant);
      const pet = await createPet(app, tenant, { categoryId: category.id, name: 'Ada' });
      await as(app, tenant, {
        method: 'PATCH',
        url: `/v1/pets/${pet.id}`,
        payload: { name: 'Ada II' },
      });
      const order = await as(app, tenant, {
        method: 'POST',
        url: '/v1/store/orders',
        payload: { petId: pet.id },
      });
      assert.equal(order.statusCode, 201);
      await as(app, tenant, {
        method: 'PATCH',
        url: `/v1/store/orders/${order.json().id}`,
        payload: { status: 'cancelled' },
      });
      const other = await createPet(app, tenant, { categoryId: category.id, name: 'Bo' });
      const removed = await as(app, tenant, { method: 'DELETE', url: `/v1/pets/${other.id}` });
      assert.equal(removed.statusCode, 204);

      const all = await as(app, tenant, { method: 'GET', url: '/v1/events?limit=100' });
      assert.equal(all.statusCode, 200);
      const events = all.json() as Array<{ id: string; type: string; data: { id: number } }>;
      assert.deepEqual(
        events.map((e) => e.type),
        [
          'pet.created',
          'pet.updated',
          'order.placed',
          'pet.updated',
          'order.cancelled',
          'pet.updated',
          'pet.created',
          'pet.deleted',
        ],
      );
      assert.deepEqual(events[1]?.data, { ...pet, name: 'Ada II' });
      assert.deepEqual(
        [...events].sort((a, b) => (a.id < b.id ? -1 : 1)),
        events,
      );
      assert.ok(events.every((e) => /^evt_[0-9A-Za-z]{20}$/.test(e.id)));

      // Pages of two, following Link, give the same list.
      const paged: string[] = [];
      let url: string | undefined = '/v1/events?limit=2';
      while (url) {
        const page = await as(app, tenant, { method: 'GET', url });
        paged.push(...page.json().map((e: { id: string }) => e.id));
        const next = nextLinkUrl(page);
        url = next && pathOf(next);
      }
      assert.deepEqual(
        paged,
        events.map((e) => e.id),
      );

      const created = await as(app, tenant, { method: 'GET', url: '/v1/events?type=pet.created' });
      assert.deepEqual(
        created.json().map((e: { data: { name: string } }) => e.data.name),
        ['Ada', 'Bo'],
      );
      const bad = await as(app, tenant, { method: 'GET', url: '/v1/events?type=pet.eaten' });
      assert.equal(errorCode(bad), 'validation_failed');
      const cursor = await as(app, tenant, { method: 'GET', url: '/v1/events?cursor=abc' });
      assert.equal(errorCode(cursor), 'invalid_cursor');

      // Another account sees none of them.
      const stranger = await newTenant(app);
      const theirs = await as(app, stranger, { method: 'GET', url: '/v1/events' });
      assert.deepEqual(theirs.json(), []);
    });

    it('writes no event for a change that did not happen', async () => {
      const tenant = await newTenant(app);
      const refused = await as(app, tenant, {
        method: 'POST',
        url: '/v1/pets',
        payload: { name: 'Ghost', categoryId: 999 },
      });
      assert.equal(errorCode(refused), 'unknown_category');
      const events = await as(app, tenant, { method: 'GET', url: '/v1/events' });
      assert.deepEqual(events.json(), []);
    });
  });

  describe('webhook endpoints', () => {
    it('creates, shows the secret once, lists, changes and removes', async () => {
      const tenant = await newTenant(app);
      const res = await as(app, tenant, {
        method: 'POST',
        url: '/v1/webhooks',
        payload: { url: `${receiver.url}/crud`, events: ['pet.created'] },
      });
      assert.equal(res.statusCode, 201, res.body);
      const endpoint = res.json();
      assert.match(endpoint.secret, /^whsec_[0-9A-Za-z]{32}$/);
      assert.match(String(res.headers.location), new RegExp(`/v1/webhooks/${endpoint.id}$`));
      assert.deepEqual(endpoint.events, ['pet.created']);
      assert.equal(endpoint.enabled, true);

      const one = await as(app, tenant, { method: 'GET', url: `/v1/webhooks/${endpoint.id}` });
      assert.equal(one.statusCode, 200);
      assert.equal(one.json().secret, undefined);
      const list = await as(app, tenant, { method: 'GET', url: '/v1/webhooks' });
      assert.deepEqual(
        list.json().map((e: { id: string }) => e.id),
        [endpoint.id],
      );
      // The secret is not stored as it is.
      const stored = await t.database.reader
        .selectFrom('webhook_endpoints')
        .select('secret')
        .where('id', '=', endpoint.id)
        .executeTakeFirstOrThrow();
      assert.ok(!stored.secret.includes(endpoint.secret.slice(6)));

      const changed = await as(app, tenant, {
        method: 'PATCH',
        url: `/v1/webhooks/${endpoint.id}`,
        payload: { events: ['*'], enabled: false },
      });
      assert.equal(changed.statusCode, 200);
      assert.deepEqual(changed.json().events, ['*']);
      assert.equal(changed.json().enabled, false);

      const removed = await as(app, tenant, {
        method: 'DELETE',
        url: `/v1/webhooks/${endpoint.id}`,
      });
      assert.equal(removed.statusCode, 204);
      const gone = await as(app, tenant, { method: 'GET', url: `/v1/webhooks/${endpoint.id}` });
      assert.equal(errorCode(gone), 'not_found');
    });

    it('replays a create sent again with its Idempotency-Key, secret and all', async () => {
      const tenant = await newTenant(app);
      const send = () =>
        as(app, tenant, {
          method: 'POST',
          url: '/v1/webhooks',
          headers: { 'idempotency-key': 'create-hook-1' },
          payload: { url: `${receiver.url}/idem`, events: ['*'] },
        });
      const first = await send();
      const again = await send();
      assert.equal(first.statusCode, 201);
      assert.equal(again.statusCode, 201);
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assert.deepEqual(again.json(), first.json());
      const list = await as(app, tenant, { method: 'GET', url: '/v1/webhooks' });
      assert.equal(list.json().length, 1);
    });

    it("answers 404 for another account's endpoint, on every operation", async () => {
      const owner = await newTenant(app);
      const stranger = await newTenant(app);
      const { id } = await addEndpoint(app, owner, `${receiver.url}/private`, ['*']);
      const evt = 'evt_0000000000000000000A';
      for (const [method, url, payload] of [
        ['GET', `/v1/webhooks/${id}`],
        ['PATCH', `/v1/webhooks/${id}`, { enabled: false }],
        ['DELETE', `/v1/webhooks/${id}`],
        ['POST', `/v1/webhooks/${id}/test`],
        ['POST', `/v1/webhooks/${id}/rotate-secret`],
        ['GET', `/v1/webhooks/${id}/deliveries`],
        ['POST', `/v1/webhooks/${id}/deliveries/${evt}/retry`],
      ] as const) {
        const res = await as(app, stranger, {
          method,
          url,
          ...(payload && { payload }),
        });
        assert.equal(res.statusCode, 404, `${method} ${url}: ${res.body}`);
        assert.equal(errorCode(res), 'not_found');
      }
      const list = await as(app, stranger, { method: 'GET', url: '/v1/webhooks' });
      assert.deepEqual(list.json(), []);
      const still = await as(app, owner, { method: 'GET', url: `/v1/webhooks/${id}` });
      assert.equal(still.json().enabled, true);
    });

    it('refuses URLs that are not https-or-local, or that reach private addresses', async () => {
      const tenant = await newTenant(app);
      for (const url of [
        'http://10.0.0.1/hook',
        'https://192.168.1.10/hook',
        'https://169.254.169.254/latest/meta-data',
        'https://[fd00::1]/hook',
        'https://[::ffff:10.0.0.1]/hook',
        'http://100.64.0.1/hook',
        'ftp://127.0.0.1/hook',
        'https://user:pass@127.0.0.1/hook',
      ]) {
        const res = await as(app, tenant, {
          method: 'POST',
          url: '/v1/webhooks',
          payload: { url, events: ['*'] },
        });
        assert.equal(res.statusCode, 400, `${url}: ${res.body}`);
        assert.ok(['webhook_url_refused', 'validation_failed'].includes(errorCode(res)), url);
      }
      const patched = await addEndpoint(app, tenant, `${receiver.url}/ok`, ['*']);
      const res = await as(app, tenant, {
        method: 'PATCH',
        url: `/v1/webhooks/${patched.id}`,
        payload: { url: 'https://10.1.2.3/' },
      });
      assert.equal(errorCode(res), 'webhook_url_refused');
    });
  });

  describe('delivery', () => {
    it('POSTs signed events, in order per resource, with the event id', async () => {
      const tenant = await newTenant(app);
      const { secret } = await addEndpoint(app, tenant, `${receiver.url}/signed`, [
        'pet.created',
        'pet.updated',
      ]);
      const category = await createCategory(app, tenant);
      const pet = await createPet(app, tenant, { categoryId: category.id, name: 'One' });
      for (const name of ['Two', 'Three', 'Four']) {
        const res = await as(app, tenant, {
          method: 'PATCH',
          url: `/v1/pets/${pet.id}`,
          payload: { name },
        });
        assert.equal(res.statusCode, 200);
      }
      await until(() => receiver.of('/signed').length >= 4, 'four deliveries');
      const got = receiver.of('/signed');
      assert.deepEqual(
        got.map((r) => JSON.parse(r.body).data.name),
        ['One', 'Two', 'Three', 'Four'],
      );
      for (const r of got) {
        const body = JSON.parse(r.body);
        assert.deepEqual(Object.keys(body), ['id', 'type', 'createdAt', 'data']);
        assert.equal(r.headers['animal-store-event-id'], body.id);
        assert.equal(r.headers['content-type'], 'application/json');
        const header = String(r.headers['animal-store-signature']);
        assert.ok(verifySignature(secret, header, r.body), header);
        assert.ok(!verifySignature('whsec_wrong', header, r.body));
        assert.ok(!verifySignature(secret, header, `${r.body} `));
      }
    });

    it('tries again after failures, then logs the delivery as delivered', async () => {
      const tenant = await newTenant(app);
      const { id } = await addEndpoint(app, tenant, `${receiver.url}/flaky`, ['pet.created']);
      let calls = 0;
      receiver.answer = (r) => (r.path === '/flaky' && ++calls <= 2 ? 500 : 200);
      try {
        const category = await createCategory(app, tenant);
        await createPet(app, tenant, { categoryId: category.id });
        await until(() => receiver.of('/flaky').length >= 3, 'three attempts');
        const log = await (async () => {
          let last: Array<Record<string, unknown>> = [];
          await until(async () => {
            const res = await as(app, tenant, {
              method: 'GET',
              url: `/v1/webhooks/${id}/deliveries`,
            });
            last = res.json();
            return last[0]?.status === 'delivered';
          }, 'the log to say delivered');
          return last;
        })();
        assert.equal(log.length, 1);
        assert.equal(log[0]?.attempts, 3);
        assert.equal(log[0]?.lastStatusCode, 200);
        assert.equal(log[0]?.lastResponse, 'answer 200');
        assert.equal(log[0]?.eventType, 'pet.created');
        const ids = new Set(receiver.of('/flaky').map((r) => JSON.parse(r.body).id));
        assert.equal(ids.size, 1, 'the same event each time');
      } finally {
        receiver.answer = () => 200;
      }
    });

    it('sends nothing to a removed endpoint; replays one delivery from the log', async () => {
      const tenant = await newTenant(app);
      const removed = await addEndpoint(app, tenant, `${receiver.url}/removed`, ['*']);
      const kept = await addEndpoint(app, tenant, `${receiver.url}/kept`, ['*']);
      const del = await as(app, tenant, { method: 'DELETE', url: `/v1/webhooks/${removed.id}` });
      assert.equal(del.statusCode, 204);
      const category = await createCategory(app, tenant);
      await createPet(app, tenant, { categoryId: category.id });
      await until(() => receiver.of('/kept').length >= 1, 'the kept endpoint');
      // Same round, same dispatcher: the removed one would have had it by now.
      assert.equal(receiver.of('/removed').length, 0);

      const log = await as(app, tenant, {
        method: 'GET',
        url: `/v1/webhooks/${kept.id}/deliveries`,
      });
      const delivery = log.json()[0];
      await until(async () => {
        const res = await as(app, tenant, {
          method: 'GET',
          url: `/v1/webhooks/${kept.id}/deliveries`,
        });
        return res.json()[0]?.status === 'delivered';
      }, 'delivered');
      const retry = await as(app, tenant, {
        method: 'POST',
        url: `/v1/webhooks/${kept.id}/deliveries/${delivery.id}/retry`,
      });
      assert.equal(retry.statusCode, 202, retry.body);
      await until(() => receiver.of('/kept').length >= 2, 'the replay');
      const [first, replay] = receiver.of('/kept');
      assert.equal(replay?.body, first?.body);
      assert.equal(replay?.headers['animal-store-event-id'], delivery.id);
      const missing = await as(app, tenant, {
        method: 'POST',
        url: `/v1/webhooks/${kept.id}/deliveries/evt_0000000000000000000A/retry`,
      });
      assert.equal(errorCode(missing), 'not_found');
    });

    it('sends a test event, and both signatures for 24 h after a rotation', async () => {
      const tenant = await newTenant(app);
      const { id, secret } = await addEndpoint(app, tenant, `${receiver.url}/rotated`, [
        'message.sent',
      ]);
      const rotated = await as(app, tenant, {
        method: 'POST',
        url: `/v1/webhooks/${id}/rotate-secret`,
      });
      assert.equal(rotated.statusCode, 200, rotated.body);
      const fresh = rotated.json().secret as string;
      assert.notEqual(fresh, secret);
      const test = await as(app, tenant, { method: 'POST', url: `/v1/webhooks/${id}/test` });
      assert.equal(test.statusCode, 202, test.body);
      await until(() => receiver.of('/rotated').length >= 1, 'the test event');
      const [got] = receiver.of('/rotated');
      assert.equal(JSON.parse(got?.body ?? '').type, 'webhook.test');
      const header = String(got?.headers['animal-store-signature']);
      assert.equal(header.split(',').filter((p) => p.startsWith('v1=')).length, 2);
      assert.ok(verifySignature(fresh, header, got?.body ?? ''));
      assert.ok(verifySignature(secret, header, got?.body ?? ''));
    });

    it('delivers message.sent to subscribed endpoints', async () => {
      const tenant = await newTenant(app);
      await addEndpoint(app, tenant, `${receiver.url}/messages`, ['message.sent']);
      const res = await as(app, tenant, {
        method: 'POST',
        url: '/messages',
        payload: { message: 'hello hooks' },
      });
      assert.equal(res.statusCode, 202, res.body);
      await until(() => receiver.of('/messages').length >= 1, 'message.sent');
      const event = JSON.parse(receiver.of('/messages')[0]?.body ?? '');
      assert.equal(event.type, 'message.sent');
      assert.equal(event.data.id, res.json().id);
      assert.equal(event.data.status, 'sent');
    });

    it('counts deliveries by outcome in /metrics', async () => {
      const res = await app.inject({ method: 'GET', url: '/metrics' });
      assert.match(res.body, /webhook_deliveries_total\{outcome="delivered"\} [1-9]/);
      assert.match(res.body, /webhook_deliveries_total\{outcome="retry"\} [1-9]/);
    });
  });
});

describe('webhooks across two instances on PostgreSQL', {
  skip: !process.env.TEST_DATABASE_URL && 'needs TEST_DATABASE_URL',
}, () => {
  it('delivers every event once, in order per resource, with two dispatchers racing for them', async () => {
    const receiver = await new Receiver().start();
    const a = await startApp({ env: FAST, ownStore: true });
    const b = await startApp({ env: { ...FAST, DATABASE_URL: a.databaseUrl } });
    try {
      const tenant = await newTenant(a.app);
      await addEndpoint(a.app, tenant, `${receiver.url}/both`, ['pet.created', 'pet.updated']);
      const category = await createCategory(a.app, tenant);
      // Changes through both instances, each pet changed three times after its creation.
      const pets = [];
      for (let i = 0; i < 6; i++) {
        const via = i % 2 === 0 ? a.app : b.app;
        pets.push(await createPet(via, tenant, { categoryId: category.id, name: `p${i}-0` }));
      }
      for (let round = 1; round <= 3; round++) {
        await Promise.all(
          pets.map(async (pet, i) => {
            const via = (i + round) % 2 === 0 ? a.app : b.app;
            const res = await as(via, tenant, {
              method: 'PATCH',
              url: `/v1/pets/${pet.id}`,
              payload: { name: `p${i}-${round}` },
            });
            assert.equal(res.statusCode, 200, res.body);
          }),
        );
      }
      await until(() => receiver.of('/both').length >= 24, 'every event delivered');
      // Closed, neither dispatcher sends again: a duplicate would be at the receiver by now.
      await b.close();
      await a.close();
      const events = receiver.of('/both').map((r) => JSON.parse(r.body));
      assert.equal(new Set(events.map((e) => e.id)).size, events.length, 'no event twice');
      assert.equal(events.length, 24);
      pets.forEach((pet, i) => {
        assert.deepEqual(
          events.filter((e) => e.data.id === pet.id).map((e) => e.data.name),
          [0, 1, 2, 3].map((round) => `p${i}-${round}`),
          `pet ${pet.id}'s events in the order of its changes`,
        );
      });
    } finally {
      await b.close();
      await a.close();
      await receiver.close();
    }
  });
});

describe('messages and webhooks: the quickstart', () => {
  it('sends a message as message.sent to the endpoints that want it, and to the log only without one', async () => {
    const receiver = await new Receiver().start();
    const log = captureLog();
    const t = await startApp({
      env: { ...FAST, LOG_LEVEL: 'info' },
      logStream: log.stream,
      ownStore: true,
    });
    try {
      const hooked = await newTenant(t.app);
      await addEndpoint(t.app, hooked, `${receiver.url}/sent`, ['message.sent']);
      const plain = await newTenant(t.app);
      // An endpoint that wants other events does not take the log's place.
      await addEndpoint(t.app, plain, `${receiver.url}/pets`, ['pet.created']);
      const send = async (tenant: Tenant, message: string) => {
        const res = await as(t.app, tenant, {
          method: 'POST',
          url: '/messages',
          payload: { message },
        });
        assert.equal(res.statusCode, 202, res.body);
        return res.json().id as string;
      };
      const record = async (tenant: Tenant, id: string) =>
        (await as(t.app, tenant, { url: `/messages/${id}` })).json();
      const [hookedId, plainId] = [
        await send(hooked, 'to the hook'),
        await send(plain, 'to the log'),
      ];
      await until(
        async () =>
          (await record(hooked, hookedId)).webhooks.delivered === 1 &&
          (await record(plain, plainId)).status === 'sent',
        'both messages sent and the webhook delivered',
      );
      const hookedRecord = await record(hooked, hookedId);
      assert.equal(hookedRecord.status, 'sent');
      assert.deepEqual(hookedRecord.webhooks, { pending: 0, delivered: 1, failed: 0 });
      assert.deepEqual((await record(plain, plainId)).webhooks, {
        pending: 0,
        delivered: 0,
        failed: 0,
      });
      assert.equal(receiver.of('/sent').length, 1);
      assert.equal(receiver.of('/pets').length, 0, 'an endpoint gets only the types it wants');
      assert.equal(JSON.parse(receiver.of('/sent')[0]?.body ?? '').data.id, hookedId);
      const sentLines = log.lines().filter((line) => line.msg === 'message sent');
      assert.deepEqual(
        sentLines.map((line) => line.messageId),
        [plainId],
        'the log has the message of the account without a message.sent endpoint, only',
      );
    } finally {
      await t.close();
      await receiver.close();
    }
  });

  it('shows a message whose webhook keeps failing as pending, then failed', async () => {
    const receiver = await new Receiver().start();
    receiver.answer = () => 500;
    const t = await startApp({
      env: { ...FAST, WEBHOOK_RETRY_FOR_SECONDS: '2' },
      ownStore: true,
    });
    try {
      const tenant = await newTenant(t.app);
      await addEndpoint(t.app, tenant, `${receiver.url}/down`, ['*']);
      const res = await as(t.app, tenant, {
        method: 'POST',
        url: '/messages',
        payload: { message: 'hi' },
      });
      const id = res.json().id as string;
      const state = async () =>
        (await as(t.app, tenant, { url: `/messages/${id}` })).json().webhooks;
      await until(async () => receiver.of('/down').length >= 1, 'a first failed try');
      assert.deepEqual(await state(), { pending: 1, delivered: 0, failed: 0 });
      await until(async () => (await state()).failed === 1, 'the delivery given up on');
      assert.deepEqual(await state(), { pending: 0, delivered: 0, failed: 1 });
    } finally {
      await t.close();
      await receiver.close();
    }
  });
});

describe('webhooks: an endpoint failing for the whole retry period', () => {
  it('fails its deliveries and is disabled, saying why', async () => {
    const receiver = await new Receiver().start();
    receiver.answer = () => 503;
    const { url, cleanup } = sqliteDatabaseUrl();
    const config = loadConfig({
      DATABASE_URL: url,
      LOG_LEVEL: 'silent',
      DEMO_ACCOUNT: 'false',
      ...FAST,
      ...CHEAP_HASHES,
      WEBHOOK_RETRY_FOR_SECONDS: '1',
    });
    const database = openDatabase(url);
    await database.schema.migrate();
    const app = await buildApp({ config, database });
    try {
      await app.ready();
      const tenant = await newTenant(app);
      const { id } = await addEndpoint(app, tenant, `${receiver.url}/down`, ['pet.created']);
      const category = await createCategory(app, tenant);
      await createPet(app, tenant, { categoryId: category.id });
      await until(async () => {
        const res = await as(app, tenant, { method: 'GET', url: `/v1/webhooks/${id}` });
        return res.json().enabled === false;
      }, 'the endpoint to be disabled');
      const endpoint = await as(app, tenant, { method: 'GET', url: `/v1/webhooks/${id}` });
      assert.match(endpoint.json().disabledReason, /failed/);
      const log = await as(app, tenant, { method: 'GET', url: `/v1/webhooks/${id}/deliveries` });
      assert.equal(log.json()[0].status, 'failed');
      assert.equal(log.json()[0].lastStatusCode, 503);
      assert.ok(receiver.received.length >= 2);
    } finally {
      await app.close();
      await database.close();
      await receiver.close();
      cleanup();
    }
  });
});

describe('webhook addresses (SSRF)', () => {
  const production = { allowLoopback: false };
  const development = { allowLoopback: true };

  it('refuses loopback, private, link-local and metadata addresses', () => {
    for (const address of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.0.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '::1',
      'fe80::1',
      'fd00:ec2::254',
      '::ffff:127.0.0.1',
      '224.0.0.1',
    ]) {
      assert.ok(refusedAddress(address, production), address);
    }
    for (const address of ['93.184.216.34', '2606:4700::1111', '8.8.8.8']) {
      assert.equal(refusedAddress(address, production), undefined, address);
    }
    assert.equal(refusedAddress('127.0.0.1', development), undefined);
    assert.ok(refusedAddress('10.0.0.1', development));
  });

  it('outside development: https only, and names resolving to loopback are refused', async () => {
    assert.match(String(await refusedUrl('http://example.com/', production)), /https/);
    assert.match(String(await refusedUrl('https://127.0.0.1/', production)), /loopback/);
    assert.match(String(await refusedUrl('https://localhost/', production)), /resolves to/);
    assert.ok(await refusedUrl('https://name.invalid/', production));
    assert.equal(await refusedUrl('http://127.0.0.1:9/', development), undefined);
  });

  it('checks the address again when connecting (DNS rebinding)', async () => {
    const lookup = guardedLookup(production);
    const error = await new Promise<NodeJS.ErrnoException | null>((resolve) =>
      lookup('localhost', {}, (err) => resolve(err)),
    );
    assert.match(String(error?.message), /refused to connect/);
    const allowed = await new Promise<unknown>((resolve) =>
      guardedLookup(development)('localhost', { all: true }, (err, addresses) =>
        resolve(err ?? addresses),
      ),
    );
    assert.ok(Array.isArray(allowed), String(allowed));
  });

  it('refuses http URLs and loopback at registration when not in development', async () => {
    const t = await startApp({
      env: {
        APP_ENV: 'staging',
        STAGING_BASE_URL: 'https://staging.example.com/v1',
        MESSAGES_BASE_URL: 'https://staging.example.com',
        SESSION_SECRET: 'a'.repeat(32),
        WEBHOOK_SECRET_KEY: 'k'.repeat(32),
      },
    });
    try {
      const tenant = await newTenant(t.app);
      for (const url of [
        'http://127.0.0.1:9/hook',
        'https://127.0.0.1:9/hook',
        'https://localhost/',
      ]) {
        const res = await as(t.app, tenant, {
          method: 'POST',
          url: '/v1/webhooks',
          payload: { url, events: ['*'] },
        });
        assert.equal(errorCode(res), 'webhook_url_refused', url);
      }
    } finally {
      await t.close();
    }
  });
});
