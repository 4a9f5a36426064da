import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { startApp, type TestApp, until } from './helpers.js';
import { Visitor } from './portal-visitor.js';

/** Signs a new browser up, with an account of its own. */
async function signedUp(app: FastifyInstance): Promise<Visitor> {
  const visitor = new Visitor(app);
  const res = await visitor.signUp(`hooks-${crypto.randomUUID()}@example.com`);
  assert.equal(res.statusCode, 303, res.body);
  return visitor;
}

describe('portal: webhooks page', () => {
  let t: TestApp;
  let receiver: Server;
  let url = '';
  const bodies: string[] = [];
  before(async () => {
    t = await startApp({ env: { WEBHOOK_POLL_MS: '20' }, ownStore: true });
    receiver = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => {
        body += String(chunk);
      });
      req.on('end', () => {
        bodies.push(body);
        res.end('thanks');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/portal-hook`;
  });
  after(async () => {
    await t.close();
    receiver.closeAllConnections();
    await new Promise((resolve) => receiver.close(resolve));
  });

  it('adds an endpoint (secret shown once), sends a test, shows the log and retries', async () => {
    const visitor = await signedUp(t.app);
    const page = await visitor.get('/portal/webhooks');
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /No endpoints yet/);

    const refused = await visitor.post('/portal/webhooks', { url: 'https://10.0.0.1/hook' });
    assert.equal(refused.statusCode, 400);
    assert.match(refused.body, /refused/);
    const forged = await visitor.post('/portal/webhooks', { url }, { csrf: false });
    assert.equal(forged.statusCode, 403);

    const added = await visitor.post('/portal/webhooks', { url });
    assert.equal(added.statusCode, 201, added.body);
    assert.match(added.body, /id="new-secret" type="text" readonly value="whsec_[0-9A-Za-z]{32}"/);
    const id = /href="\/portal\/webhooks\/(we_[0-9A-Za-z]+)"/.exec(added.body)?.[1];
    assert.ok(id, 'the endpoint is listed');
    const listed = await visitor.get('/portal/webhooks');
    assert.doesNotMatch(listed.body, /whsec_/);

    await visitor.get(`/portal/webhooks/${id}`);
    const sent = await visitor.post(`/portal/webhooks/${id}/test`);
    assert.equal(sent.statusCode, 303);
    await until(() => bodies.length >= 1, 'the test event');
    assert.equal(JSON.parse(bodies[0] ?? '').type, 'webhook.test');
    await until(
      async () =>
        /<td[^>]*>delivered<\/td>/.test((await visitor.get(`/portal/webhooks/${id}`)).body),
      'the log to say delivered',
    );
    const detail = await visitor.get(`/portal/webhooks/${id}`);
    const eventId = /<td[^>]*><code>(evt_[0-9A-Za-z]{20})<\/code><\/td>/.exec(detail.body)?.[1];
    assert.ok(eventId);
    const retried = await visitor.post(`/portal/webhooks/${id}/deliveries/${eventId}/retry`);
    assert.equal(retried.statusCode, 303);
    await until(() => bodies.length >= 2, 'the replay');
    assert.equal(bodies[1], bodies[0]);

    // Another account's visitor finds nothing there.
    const stranger = await signedUp(t.app);
    const theirs = await stranger.get(`/portal/webhooks/${id}`);
    assert.equal(theirs.statusCode, 404);
  });

  it('adds one endpoint when the form is sent twice, and shows its secret once', async () => {
    const visitor = await signedUp(t.app);
    await visitor.get('/portal/webhooks');
    const formKey = visitor.formKey;
    assert.ok(formKey, 'the form carries a key');
    // A double click: the second is sent before the first is answered.
    const both = await Promise.all([
      visitor.post('/portal/webhooks', { url }, { formKey }),
      visitor.post('/portal/webhooks', { url }, { formKey }),
    ]);
    const secret = (res: { body: string }) => /value="(whsec_[0-9A-Za-z]{32})"/.exec(res.body)?.[1];
    const shown = both.filter((res) => res.statusCode === 201);
    assert.equal(shown.length, 1, 'one answer shows the secret');
    const first = secret(shown[0] as { body: string });
    assert.ok(first);
    // The other, and a reload after (the same form sent again), say it was added: no secret.
    const reload = await visitor.post('/portal/webhooks', { url }, { formKey });
    for (const res of [...both.filter((r) => r.statusCode !== 201), reload]) {
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(secret(res), undefined);
      assert.ok(!res.body.includes(first));
      assert.match(
        res.body,
        /added the endpoint for .* already\. Its signing secret was shown once/,
      );
    }
    const listed = await visitor.get('/portal/webhooks');
    assert.equal(listed.body.match(/href="\/portal\/webhooks\/we_/g)?.length, 1, 'one endpoint');
  });
});
