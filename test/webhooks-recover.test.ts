/**
 * Recovering an endpoint after an outage (issue 55, item 2): the deliveries that failed while
 * it was down, or every event of its types, sent again, each verified with the
 * `standardwebhooks` package; refused for a disabled endpoint or a time out of range.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import {
  addEndpoint,
  as,
  createCategory,
  createPet,
  errorCode,
  FAST,
  newTenant,
  startApp,
  type TestApp,
  until,
} from './helpers.js';
import { Visitor } from './portal-visitor.js';

/** A receiver on 127.0.0.1 that answers 503 to a path while `down(path)` says so, else 204,
 * keeping what it took and counting every attempt. */
function receiver(down: (path: string) => boolean) {
  const received: Array<{ path: string; headers: IncomingHttpHeaders; body: string }> = [];
  let attempts = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      attempts++;
      const path = req.url ?? '';
      if (down(path)) return res.writeHead(503).end('down');
      received.push({ path, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(204).end();
    });
  });
  return {
    received,
    attempts: () => attempts,
    /** Listens, and answers its base URL. */
    start: async () => {
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    },
    stop: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** The events of these deliveries, each verified with `standardwebhooks` (throws if one is not). */
function verifiedEvents(
  secret: string,
  deliveries: Array<{ headers: IncomingHttpHeaders; body: string }>,
) {
  return deliveries.map(
    (r) =>
      new Webhook(secret).verify(r.body, {
        'webhook-id': String(r.headers['webhook-id']),
        'webhook-timestamp': String(r.headers['webhook-timestamp']),
        'webhook-signature': String(r.headers['webhook-signature']),
      }) as { type: string; data: { name: string } },
  );
}

describe('POST /v1/webhooks/{id}/recover', () => {
  let t: TestApp;
  let down = true;
  const receiving = receiver((path) => path === '/outage' && down);
  const { received } = receiving;
  let base = '';
  before(async () => {
    // Deliveries fail for good after 1 s, and the endpoint is disabled with them.
    t = await startApp({ ownStore: true, env: { ...FAST, WEBHOOK_RETRY_FOR_SECONDS: '1' } });
    base = await receiving.start();
  });
  after(async () => {
    await t.close();
    await receiving.stop();
  });

  it('sends again what failed during an outage, recovered from the portal, each verifiable', async () => {
    const tenant = await newTenant(t.app);
    const since = new Date(Date.now() - 1000).toISOString();
    const { id, secret } = await addEndpoint(t.app, tenant, `${base}/outage`, ['pet.created']);
    const category = await createCategory(t.app, tenant);
    const names = ['One', 'Two', 'Three'];
    for (const name of names) await createPet(t.app, tenant, { categoryId: category.id, name });
    const endpoint = async () => (await as(t.app, tenant, { url: `/v1/webhooks/${id}` })).json();
    await until(async () => (await endpoint()).enabled === false, 'the endpoint disabled');
    const recover = (payload: object) =>
      as(t.app, tenant, { method: 'POST', url: `/v1/webhooks/${id}/recover`, payload });

    // Disabled, nothing can be sent to it: enable it first.
    const refused = await recover({ since });
    assert.equal(refused.statusCode, 409);
    assert.equal(errorCode(refused), 'endpoint_disabled');
    const list = async () =>
      (await as(t.app, tenant, { url: `/v1/webhooks/${id}/deliveries` })).json() as Array<{
        status: string;
      }>;
    await until(async () => (await list()).every((d) => d.status !== 'sending'), 'none in flight');
    // Those that gave up are failed for good. One still waiting for its next attempt when the
    // endpoint was disabled would go out by itself once enabled; an outage of an hour (of 3
    // days, in production) leaves every one failed, as here.
    await t.app.ctx.database.write((tx) =>
      tx
        .updateTable('webhook_deliveries')
        .set({ status: 'failed' })
        .where('endpoint_id', '=', id)
        .where('status', '=', 'pending')
        .execute(),
    );
    down = false;
    await as(t.app, tenant, {
      method: 'PATCH',
      url: `/v1/webhooks/${id}`,
      payload: { enabled: true },
    });
    const failed = (await as(t.app, tenant, { url: `/v1/webhooks/${id}/deliveries` }))
      .json()
      .filter((d: { status: string }) => d.status === 'failed').length;
    assert.equal(failed, 3);
    // Recovered from the portal, as a person back from the outage does: the endpoint's form.
    const visitor = new Visitor(t.app);
    assert.equal((await visitor.signIn(tenant.email, tenant.password)).statusCode, 303);
    await visitor.get(`/portal/webhooks/${id}`);
    const sent = await visitor.post(`/portal/webhooks/${id}/recover`, {
      since: since.slice(0, 19),
    });
    assert.equal(sent.statusCode, 303, sent.body);
    const shown = await visitor.get(String(sent.headers.location));
    assert.match(shown.body, /3 deliveries in line to be sent again/);
    await until(
      async () => received.filter((r) => r.path === '/outage').length >= 3,
      'three deliveries',
    );
    const verified = verifiedEvents(
      secret,
      received.filter((r) => r.path === '/outage'),
    );
    assert.deepEqual(verified.map((e) => e.data.name).sort(), [...names].sort());
    const deliveries = (await as(t.app, tenant, { url: `/v1/webhooks/${id}/deliveries` })).json();
    assert.ok(deliveries.every((d: { status: string }) => d.status === 'delivered'));
    // Nothing failed since: a second recovery queues nothing.
    assert.deepEqual((await recover({ since })).json(), { queued: 0, more: false });
  });

  it('with include=all, sends every event of its types since then, to an endpoint made after them', async () => {
    const tenant = await newTenant(t.app);
    const since = new Date(Date.now() - 1000).toISOString();
    const category = await createCategory(t.app, tenant);
    await createPet(t.app, tenant, { categoryId: category.id, name: 'Before' });
    await createPet(t.app, tenant, { categoryId: category.id, name: 'Its hook' });
    const { id } = await addEndpoint(t.app, tenant, `${base}/late`, ['pet.created']);
    const res = await as(t.app, tenant, {
      method: 'POST',
      url: `/v1/webhooks/${id}/recover`,
      payload: { since, include: 'all' },
    });
    assert.equal(res.statusCode, 202, res.body);
    assert.deepEqual(res.json(), { queued: 2, more: false });
    await until(async () => received.filter((r) => r.path === '/late').length >= 2, 'both events');
    const types = received.filter((r) => r.path === '/late').map((r) => JSON.parse(r.body).type);
    assert.deepEqual(types, ['pet.created', 'pet.created']);
  });

  it("refuses a time older than 30 days or ahead, another account's endpoint, and changes nothing", async () => {
    const tenant = await newTenant(t.app);
    const { id } = await addEndpoint(t.app, tenant, `${base}/range`, ['pet.created']);
    const recover = (since: string, who = tenant) =>
      as(t.app, who, { method: 'POST', url: `/v1/webhooks/${id}/recover`, payload: { since } });
    const old = await recover(new Date(Date.now() - 31 * 24 * 3600 * 1000).toISOString());
    assert.equal(old.statusCode, 400);
    assert.equal(errorCode(old), 'validation_failed');
    assert.match(old.json().message, /within the last 30 days/);
    const ahead = await recover(new Date(Date.now() + 3600 * 1000).toISOString());
    assert.equal(ahead.statusCode, 400);
    const bad = await as(t.app, tenant, {
      method: 'POST',
      url: `/v1/webhooks/${id}/recover`,
      payload: { since: 'yesterday' },
    });
    assert.equal(bad.statusCode, 400);
    const intruder = await newTenant(t.app);
    const foreign = await recover(new Date().toISOString(), intruder);
    assert.equal(foreign.statusCode, 404);
  });

  it("recovers from the portal: the endpoint page's form, its count shown", async () => {
    const tenant = await newTenant(t.app);
    const { id } = await addEndpoint(t.app, tenant, `${base}/portal-recovered`, ['pet.created']);
    const category = await createCategory(t.app, tenant);
    await createPet(t.app, tenant, { categoryId: category.id, name: 'Kept' });
    await until(
      async () => received.some((r) => r.path === '/portal-recovered'),
      'the first delivery',
    );
    const visitor = new Visitor(t.app);
    assert.equal((await visitor.signIn(tenant.email, tenant.password)).statusCode, 303);
    const page = await visitor.get(`/portal/webhooks/${id}`);
    assert.match(page.body, /action="\/portal\/webhooks\/[^"]+\/recover"/);
    const since = new Date(Date.now() - 60_000).toISOString().slice(0, 16);
    const sent = await visitor.post(`/portal/webhooks/${id}/recover`, { since, include: 'all' });
    assert.equal(sent.statusCode, 303, sent.body);
    const shown = await visitor.get(String(sent.headers.location));
    assert.match(shown.body, /1 delivery in line to be sent again/);
    await until(
      async () => received.filter((r) => r.path === '/portal-recovered').length >= 2,
      'the delivery sent again',
    );
  });
});

describe('recovering an endpoint after an hour down, its deliveries waiting for a retry', () => {
  let t: TestApp;
  let down = true;
  const receiving = receiver(() => down);
  const { received } = receiving;
  let base = '';
  before(async () => {
    // After a failed attempt the next is an hour away: a receiver down for an hour sees one
    // attempt of each, and its deliveries wait, failed, for the next.
    const hour = String(3_600_000);
    t = await startApp({
      ownStore: true,
      env: { WEBHOOK_POLL_MS: '20', WEBHOOK_RETRY_BASE_MS: hour, WEBHOOK_RETRY_MAX_MS: hour },
    });
    base = await receiving.start();
  });
  after(async () => {
    await t.close();
    await receiving.stop();
  });

  it('sends each failed delivery now, from the portal, each verifiable', async () => {
    const tenant = await newTenant(t.app);
    const since = new Date(Date.now() - 1000).toISOString();
    const { id, secret } = await addEndpoint(t.app, tenant, `${base}/in`, ['pet.created']);
    const category = await createCategory(t.app, tenant);
    const names = ['One', 'Two', 'Three', 'Four'];
    for (const name of names) await createPet(t.app, tenant, { categoryId: category.id, name });
    const deliveries = async () =>
      (await as(t.app, tenant, { url: `/v1/webhooks/${id}/deliveries` })).json() as Array<{
        status: string;
        attempts: number;
        nextAttemptAt: string | null;
      }>;
    // Tried once and waiting: its next attempt set, half an hour away or more (one still being
    // tried shows as pending too, its first attempt's time as its next).
    const later = Date.now() + 30 * 60_000;
    await until(
      async () =>
        (await deliveries()).filter(
          (d) =>
            d.status === 'pending' && d.attempts === 1 && Date.parse(`${d.nextAttemptAt}`) > later,
        ).length === 4,
      'each tried once and waiting',
    );
    down = false;
    const visitor = new Visitor(t.app);
    assert.equal((await visitor.signIn(tenant.email, tenant.password)).statusCode, 303);
    await visitor.get(`/portal/webhooks/${id}`);
    const sent = await visitor.post(`/portal/webhooks/${id}/recover`, {
      since: since.slice(0, 19),
    });
    assert.equal(sent.statusCode, 303, sent.body);
    assert.match((await visitor.get(String(sent.headers.location))).body, /4 deliveries in line/);
    await until(async () => received.length >= 4, 'the four deliveries');
    const verified = verifiedEvents(secret, received);
    assert.deepEqual(verified.map((e) => e.data.name).sort(), [...names].sort());
    await until(
      async () => (await deliveries()).every((d) => d.status === 'delivered'),
      'each settled delivered',
    );
    assert.equal(receiving.attempts(), 8, 'each sent twice: once down, once recovered');
  });
});
