/**
 * Deliveries carry the Standard Webhooks headers (webhook-id, webhook-timestamp,
 * webhook-signature), verified here by the spec's own package from the npm registry, as an
 * integrator would, without our SDK.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import {
  as,
  createCategory,
  createPet,
  newTenant,
  startApp,
  type TestApp,
  until,
} from './helpers.js';

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

describe('Standard Webhooks', () => {
  let t: TestApp;
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(204).end();
    });
  });
  let url = '';
  before(async () => {
    t = await startApp({ ownStore: true, env: { WEBHOOK_POLL_MS: '20' } });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  });
  after(async () => {
    await t.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const headersOf = (r: Received) => ({
    'webhook-id': String(r.headers['webhook-id']),
    'webhook-timestamp': String(r.headers['webhook-timestamp']),
    'webhook-signature': String(r.headers['webhook-signature']),
  });

  it("verifies a real delivery with the standardwebhooks package, and a rotation's both secrets", async () => {
    const tenant = await newTenant(t.app);
    const made = await as(t.app, tenant, {
      method: 'POST',
      url: '/v1/webhooks',
      payload: { url, events: ['pet.created'] },
    });
    assert.equal(made.statusCode, 201, made.body);
    const { id, secret } = made.json() as { id: string; secret: string };
    const category = await createCategory(t.app, tenant, 'Signed');
    await createPet(t.app, tenant, { categoryId: category.id, name: 'Signed' });
    await until(() => received.length >= 1, 'the first delivery');
    const first = received[0] as Received;
    const event = new Webhook(secret).verify(first.body, headersOf(first)) as {
      id: string;
      type: string;
    };
    assert.equal(event.type, 'pet.created');
    assert.equal(first.headers['webhook-id'], event.id);
    assert.equal(first.headers['animal-store-event-id'], event.id, 'our own headers stay');
    assert.match(String(first.headers['animal-store-signature']), /^t=\d+,v1=[0-9a-f]{64}$/);
    // Another secret, or another body, is refused by the package.
    const other = 'whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
    assert.throws(() => new Webhook(other).verify(first.body, headersOf(first)));
    assert.throws(() => new Webhook(secret).verify(`${first.body} `, headersOf(first)));

    // Rotated: for 24 hours a delivery is signed with both, and either verifies it.
    const rotated = await as(t.app, tenant, {
      method: 'POST',
      url: `/v1/webhooks/${id}/rotate-secret`,
    });
    assert.equal(rotated.statusCode, 200, rotated.body);
    const fresh = (rotated.json() as { secret: string }).secret;
    await createPet(t.app, tenant, { categoryId: category.id, name: 'Rotated' });
    await until(() => received.length >= 2, 'the delivery after the rotation');
    const second = received[1] as Received;
    assert.equal(String(second.headers['webhook-signature']).split(' ').length, 2);
    for (const key of [secret, fresh]) {
      assert.ok(new Webhook(key).verify(second.body, headersOf(second)));
    }
  });
});
