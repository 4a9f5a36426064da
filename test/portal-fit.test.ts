/**
 * The portal's pages say what is true and fit what they show (issue 54): the key form offers
 * the scopes some operation needs and no other, a new key's curl line is a command, an entry of
 * the request log names its key, and the chart shows today however little happened. How the
 * pages lay out in a browser is test/process/portal-fit.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { SCOPES } from '../src/domain/scopes.js';
import { type HourCounts, requestsChart } from '../src/request-log/portal-chart.js';
import { startApp, type TestApp } from './helpers.js';
import { Visitor } from './portal-visitor.js';

const newEmail = () => `fit-${crypto.randomUUID()}@example.com`;

function secretOf(body: string): string {
  const secret = /id="new-key" type="text" readonly value="([^"]+)"/.exec(body)?.[1];
  assert.ok(secret, 'the new key is on the page');
  return secret;
}

describe('portal: what the pages offer and name', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp();
  });
  after(() => t.close());

  it('offers the scopes some operation needs, and refuses the others as the form would', async () => {
    await t.app.ready();
    const document = t.app.swagger() as { paths?: Record<string, Record<string, unknown>> };
    // What the operations need, read from the document the routes make.
    const needed = new Set<string>();
    for (const item of Object.values(document.paths ?? {})) {
      for (const operation of Object.values(item)) {
        const security = (operation as { security?: Array<Record<string, string[]>> }).security;
        const scope = security?.[0]?.bearerAuth?.[0];
        if (scope) needed.add(scope);
      }
    }
    assert.deepEqual(new Set(SCOPES), needed, 'the scopes are those the operations need');
    for (const scope of ['events:write', 'requests:write']) assert.ok(!needed.has(scope), scope);

    const visitor = new Visitor(t.app);
    await visitor.signUp(newEmail());
    const form = await visitor.get('/portal/keys');
    for (const scope of SCOPES) {
      const box = form.body.includes(`name="scope" value="${scope}"`);
      assert.equal(box, needed.has(scope), `${scope}: ${box ? 'offered' : 'not offered'}`);
    }
    assert.match(
      form.body,
      /<td class="muted"><span aria-hidden="true">—<\/span><span class="visually-hidden">no write<\/span><\/td>/,
    );

    for (const scope of ['events:write', 'requests:write']) {
      const refused = await visitor.post('/portal/keys', {
        name: scope,
        access: 'custom',
        scope: ['events:read', scope],
      });
      assert.equal(refused.statusCode, 400, scope);
      const error = /<p class="field-error" id="access-error">([^<]*)<\/p>/.exec(refused.body)?.[1];
      assert.ok(error?.includes(`Unknown scope &quot;${scope}&quot;`), error);
      assert.ok(error?.includes('events:read, webhooks:read'), error);
      assert.doesNotMatch(refused.body, /id="new-key"/, `${scope}: no key made`);
      await visitor.get('/portal/keys');
    }
    assert.doesNotMatch((await visitor.get('/portal/keys')).body, /data-label="Name">events:write/);
  });

  it("shows a new key's curl line as a command, broken only at a space", async () => {
    const visitor = new Visitor(t.app);
    await visitor.signUp(newEmail());
    await visitor.get('/portal/keys');
    const made = await visitor.post('/portal/keys', { name: 'curl' });
    const secret = secretOf(made.body);
    const command = /<pre class="command" tabindex="0"><code>([^<]*)<\/code><\/pre>/.exec(
      made.body,
    );
    assert.ok(command, 'the command is in a block of its own');
    assert.match(
      command[1] ?? '',
      new RegExp(`^curl -H "Authorization: Bearer ${secret}" \\\\\\n  http://[^ ]+/v1/pets$`),
    );
  });

  it("names an entry's key as the list does, its id beside it; a revoked key by its id", async () => {
    const visitor = new Visitor(t.app);
    await visitor.signUp(newEmail());
    await visitor.get('/portal/keys');
    const secret = secretOf((await visitor.post('/portal/keys', { name: 'nightly job' })).body);
    const call = await t.app.inject({
      url: '/v1/pets',
      headers: { authorization: `Bearer ${secret}` },
    });
    const requestId = call.headers['x-request-id'] as string;
    await t.app.requestLog.flush();
    const keyId = /href="\/portal\/keys\/(key_[0-9A-Za-z]+)\/revoke"/.exec(
      (await visitor.get('/portal/keys')).body,
    )?.[1];
    assert.ok(keyId);
    const label = `nightly job (${secret.slice(0, 12)}…)`;

    const entry = await visitor.get(`/portal/requests/${requestId}`);
    assert.equal(entry.statusCode, 200);
    assert.ok(
      entry.body.includes(
        `<dt>Key</dt><dd>${label} <span class="muted">· <code>${keyId}</code></span></dd>`,
      ),
      'the name, then the id',
    );
    assert.ok(
      (await visitor.get('/portal/requests')).body.includes(`<td data-label="Key">${label}</td>`),
    );

    await visitor.get(`/portal/keys/${keyId}/revoke`);
    await visitor.post(`/portal/keys/${keyId}/revoke`);
    const revoked = `<span class="muted">a revoked key</span> <code>${keyId}</code>`;
    assert.ok((await visitor.get(`/portal/requests/${requestId}`)).body.includes(revoked));
    assert.ok((await visitor.get('/portal/requests')).body.includes(revoked));
  });

  it('lists a read-only key as the form named it, a key of chosen scopes by its scopes', async () => {
    const visitor = new Visitor(t.app);
    await visitor.signUp(newEmail());
    await visitor.get('/portal/keys');
    secretOf((await visitor.post('/portal/keys', { name: 'reader', access: 'read' })).body);
    await visitor.get('/portal/keys');
    const scopes = { name: 'chosen', access: 'custom', scope: ['pets:read', 'orders:read'] };
    secretOf((await visitor.post('/portal/keys', scopes)).body);
    const list = (await visitor.get('/portal/keys')).body;
    assert.match(list, /<td data-label="Access">Read only<\/td>/);
    assert.match(
      list,
      /<td data-label="Access"><code>pets:read<\/code>, <code>orders:read<\/code><\/td>/,
    );
  });
});

describe('portal: the requests chart', () => {
  /** 48 hours from 01:00 UTC: the last is the first hour of a third day, today. */
  const hours: HourCounts[] = Array.from({ length: 48 }, (_, i) => ({
    hour: new Date(Date.UTC(2026, 10, 24, 1 + i)).toISOString(),
    status2xx: i === 0 ? 5000 : 0,
    status4xx: 0,
    status429: 0,
    status5xx: i === 47 ? 1 : 0,
  }));
  const chart = requestsChart(hours, 'Three days').value;

  it('draws a day a column, today the last, shaded and labelled from its first hour on', () => {
    assert.match(chart, /<svg viewBox="0 0 72 100" preserveAspectRatio="none"/);
    assert.match(chart, /<rect class="today-band" x="48" y="0" width="24" height="100">/);
    assert.match(
      chart,
      /<li title="2026-11-24">11-24<\/li><li title="2026-11-25">11-25<\/li><li class="today" title="2026-11-26">Today<\/li>/,
    );
    assert.match(chart, /<li class="today-total">Today: 1<\/li>/);
    assert.match(
      chart,
      /<desc id="chart-desc">5,001 requests: 5,000 2xx, 0 4xx, 0 429, 1 5xx; 1 today\.<\/desc>/,
    );
  });

  it('draws one request beside thousands at a height that is seen, on either scale', () => {
    for (const scale of ['hourly', 'daily']) {
      const bars = new RegExp(`<g class="${scale}">(.*?)</g>`, 's').exec(chart)?.[1] ?? '';
      const today =
        /<rect class="bar-server today" x="[\d.]+" y="[\d.]+" width="[\d.]+" height="([\d.]+)">/.exec(
          bars,
        );
      assert.ok(today, `${scale}: today's bar is drawn`);
      assert.ok(Number(today[1]) >= 2, `${scale}: today's bar is ${today[1]} units high`);
    }
  });

  it('keeps its figures and labels out of the SVG, so they keep their size', () => {
    const svg = /<svg viewBox[^>]*>(.*?)<\/svg>/s.exec(chart)?.[1] ?? '';
    assert.doesNotMatch(svg, /<text/);
    assert.match(chart, /<div class="chart-y hourly" aria-hidden="true"><span>5,000<\/span>/);
  });
});
