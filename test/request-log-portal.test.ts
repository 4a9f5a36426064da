import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { requestsChart } from '../src/request-log/portal-chart.js';
import { newTenant, startApp, type TestApp } from './helpers.js';
import { Visitor } from './portal-visitor.js';

const newEmail = () => `requests-${crypto.randomUUID()}@example.com`;

describe('portal: requests', () => {
  let t: TestApp;
  let visitor: Visitor;
  let key = '';
  let failedId = '';
  before(async () => {
    t = await startApp();
    visitor = new Visitor(t.app);
    await visitor.signUp(newEmail());
    await visitor.get('/portal/keys');
    const made = await visitor.post('/portal/keys', { name: 'logged' });
    key = /id="new-key" type="text" readonly value="([^"]+)"/.exec(made.body)?.[1] ?? '';
    assert.ok(key);
    const headers = { authorization: `Bearer ${key}` };
    for (let i = 0; i < 3; i++) await t.app.inject({ url: '/v1/pets', headers });
    const refused = await t.app.inject({
      method: 'POST',
      url: '/v1/pets',
      headers,
      payload: { name: 'Rex', categoryId: 424242, password: 'hunter2-never-kept' },
    });
    assert.equal(refused.statusCode, 400);
    failedId = refused.headers['x-request-id'] as string;
    await t.app.requestLog.flush();
  });
  after(() => t.close());

  it('opens with the 7-day chart drawn by the service, fed by the hourly counts', async () => {
    const page = await visitor.get('/portal/requests');
    assert.equal(page.statusCode, 200);
    // A column a day: the 168 hours span 8 days, or 7 when they end at 23:00.
    assert.match(
      page.body,
      /<svg viewBox="0 0 (168|192) 100" preserveAspectRatio="none" role="img"/,
    );
    assert.match(
      page.body,
      /<desc id="chart-desc">4 requests: 3 2xx, 1 4xx, 0 429, 0 5xx; 4 today\.<\/desc>/,
    );
    for (const scale of ['hourly', 'daily']) {
      const bars = new RegExp(`<g class="${scale}">(.*?)</g>`, 's').exec(page.body)?.[1] ?? '';
      assert.equal(
        bars.match(/<rect class="bar-\w+ today" x=/g)?.length,
        2,
        `${scale}: one part of each kind, today`,
      );
    }
    assert.doesNotMatch(page.body, /<script[^>]*src="http/, 'nothing from another origin');
  });

  it('lists entries newest first, filters to errors and by key', async () => {
    const all = await visitor.get('/portal/requests');
    assert.equal(all.body.match(/data-label="Request"/g)?.length, 4);
    const errors = await visitor.get('/portal/requests?errors=1');
    assert.equal(errors.body.match(/data-label="Request"/g)?.length, 1);
    assert.match(errors.body, /<code>validation_failed<\/code>/);
    const other = await visitor.get('/portal/requests?key=key_nothinglikeit');
    assert.match(other.body, /No requests match these filters/);
  });

  it('shows one entry with its error, the redacted body and a link to the docs', async () => {
    const entry = await visitor.get(`/portal/requests/${failedId}`);
    assert.equal(entry.statusCode, 200);
    assert.match(entry.body, /The error/);
    assert.match(entry.body, /unknown field \\&quot;password/);
    assert.match(entry.body, /\[redacted\]/);
    assert.doesNotMatch(entry.body, /hunter2-never-kept/);
    assert.match(entry.body, /href="http:\/\/[^"]+\/docs#description\/errors"/);
  });

  it("answers 404 for another account's entry, and sends strangers to sign in", async () => {
    const stranger = await newTenant(t.app);
    const theirs = await t.app.inject({ url: '/v1/account', headers: stranger.headers });
    await t.app.requestLog.flush();
    const id = theirs.headers['x-request-id'] as string;
    assert.equal((await visitor.get(`/portal/requests/${id}`)).statusCode, 404);
    const anonymous = await new Visitor(t.app).get('/portal/requests');
    assert.equal(anonymous.statusCode, 303);
  });

  it("counts each log page against the account's limits, as the API's reads are", async () => {
    const reader = new Visitor(t.app);
    await reader.signUp(newEmail());
    await reader.get('/portal/keys');
    const made = await reader.post('/portal/keys', { name: 'shares the minute' });
    const secret = /id="new-key" type="text" readonly value="([^"]+)"/.exec(made.body)?.[1] ?? '';
    // A Free account: 60 a minute, the portal's log pages and the API's calls together.
    let shown = 0;
    let refused: Awaited<ReturnType<Visitor['get']>> | undefined;
    for (let i = 0; i < 70 && refused === undefined; i++) {
      const page = await reader.get(i % 2 ? '/portal/requests' : '/portal/requests/no-such-id');
      if (page.statusCode === 429) refused = page;
      else shown++;
    }
    assert.ok(refused, 'refused past the minute');
    assert.ok(shown <= 60, String(shown));
    assert.match(String(refused.headers['content-type']), /text\/html/);
    assert.ok(Number(refused.headers['retry-after']) > 0);
    const api = await t.app.inject({
      url: '/v1/requests/no-such-id',
      headers: { authorization: `Bearer ${secret}` },
    });
    assert.equal(api.statusCode, 429, 'the same minute as the API');
    // Refused again, until its Retry-After, before the session is read or anything counted.
    const again = await reader.get('/portal/requests');
    assert.equal(again.statusCode, 429);
    assert.ok(Number(again.headers['retry-after']) > 0);
    const metrics = (await t.app.inject({ url: '/metrics' })).body;
    assert.match(metrics, /^cache_hits_total\{cache="portal refusals"\} [1-9]/m);
  });

  it('draws consecutive hours, scaled to a round top, each total described', () => {
    const hours = Array.from({ length: 48 }, (_, i) => ({
      hour: new Date(Date.UTC(2026, 10, 25, i)).toISOString(),
      status2xx: i,
      status4xx: i % 2,
      status429: 0,
      status5xx: i === 47 ? 3 : 0,
    }));
    const svg = requestsChart(hours, 'Two days').value;
    assert.match(svg, /1,128 2xx, 24 4xx, 0 429, 3 5xx/);
    // The tallest hour (47 + 1 + 3 = 51) under a round top of 100; the busier day (24 to 47:
    // 852, 12 4xx and 3 5xx, 867) under 1,000.
    assert.match(svg, /<div class="chart-y hourly" aria-hidden="true"><span>100<\/span>/);
    assert.match(svg, /<div class="chart-y daily" aria-hidden="true"><span>1,000<\/span>/);
    assert.match(
      svg,
      /<li title="2026-11-25">11-25<\/li><li class="today" title="2026-11-26">Today<\/li>/,
    );
  });
});

describe('portal: requests on a server that keeps no log (REQUEST_LOG=off)', () => {
  it('says the log is off, lists nothing and shows no entry', async () => {
    const t = await startApp({ env: { REQUEST_LOG: 'off' } });
    try {
      const visitor = new Visitor(t.app);
      await visitor.signUp(newEmail());
      const page = await visitor.get('/portal/requests');
      assert.equal(page.statusCode, 200);
      assert.match(page.body, /This server keeps no request log: its operator turned it off/);
      assert.doesNotMatch(page.body, /<svg|<table/);
      const entry = await visitor.get('/portal/requests/anything');
      assert.equal(entry.statusCode, 404);
    } finally {
      await t.close();
    }
  });
});
