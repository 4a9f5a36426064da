import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import {
  addEndpoint,
  captureLog,
  createCategory,
  createPet,
  FAST,
  newTenant,
  startApp,
  type Tenant,
  type TestApp,
  until,
} from './helpers.js';

interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Array<{ key: string; value: Record<string, unknown> }>;
  status?: { code?: number };
}

/** An HTTP server on loopback that takes what is posted to it: the OTLP/HTTP (JSON) traces
 * an app sends, or the webhook deliveries it makes. */
class Sink {
  readonly bodies: Array<{ path: string; headers: IncomingHttpHeaders; body: string }> = [];
  url = '';
  private server: Server | undefined;

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        this.bodies.push({ path: req.url ?? '', headers: req.headers, body });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** Every span the OTLP requests carried. */
  spans(): ReceivedSpan[] {
    return this.bodies
      .filter((b) => b.path === '/v1/traces')
      .flatMap((b) => {
        const request = JSON.parse(b.body) as {
          resourceSpans: Array<{ scopeSpans: Array<{ spans: ReceivedSpan[] }> }>;
        };
        return request.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans));
      });
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server?.closeAllConnections();
      this.server?.close(() => resolve());
    });
  }
}

const attribute = (span: ReceivedSpan | undefined, key: string) => {
  const value = span?.attributes.find((a) => a.key === key)?.value;
  return value && Object.values(value)[0];
};

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

describe('traces (OTEL_EXPORTER_OTLP_ENDPOINT)', () => {
  let collector: Sink;
  let receiver: Sink;
  let t: TestApp;
  let tenant: Tenant;
  let base: string;
  const log = captureLog();

  before(async () => {
    collector = await new Sink().start();
    receiver = await new Sink().start();
    t = await startApp({
      ownStore: true,
      env: { ...FAST, OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, LOG_LEVEL: 'info' },
      logStream: log.stream,
    });
    tenant = await newTenant(t.app);
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
  });
  after(async () => {
    await t.close();
    await collector.close();
    await receiver.close();
  });

  it('links a POST /v1/pets, its write and its webhook delivery in one trace', async () => {
    await addEndpoint(t.app, tenant, `${receiver.url}/hook`, ['pet.created']);
    const category = await createCategory(t.app, tenant);
    // The client's own trace: the request is a span of it.
    const [traceId, clientSpan] = [hex(16), hex(8)];
    const created = await fetch(`${base}/v1/pets`, {
      method: 'POST',
      headers: {
        ...tenant.headers,
        'content-type': 'application/json',
        traceparent: `00-${traceId}-${clientSpan}-01`,
      },
      body: JSON.stringify({ name: 'Traced', categoryId: category.id }),
    });
    assert.equal(created.status, 201);
    await until(() => receiver.bodies.length === 1, 'the delivery');
    const [delivery] = receiver.bodies;
    // The receiver is told the trace: its work can join it.
    const [, sentTrace, sentParent] = String(delivery?.headers.traceparent).split('-');
    assert.equal(sentTrace, traceId);
    // Spans are sent in batches: those ended so far, now. The delivery's ends once settled.
    await until(async () => {
      await t.app.tracing.flush();
      return collector.spans().some((s) => s.name === 'webhook delivery');
    }, 'the delivery span');
    const trace = collector.spans().filter((s) => s.traceId === traceId);
    const request = trace.find((s) => s.name === 'POST /v1/pets');
    assert.ok(request, 'the request span');
    assert.equal(request.parentSpanId, clientSpan);
    assert.equal(attribute(request, 'http.route'), '/v1/pets');
    assert.equal(attribute(request, 'http.response.status_code'), 201);
    assert.equal(attribute(request, 'animal_store.account_id'), tenant.accountId);
    const write = trace.find((s) => s.name === 'store write' && s.parentSpanId === request.spanId);
    assert.ok(write, 'the write, under the request');
    const sent = trace.find((s) => s.name === 'webhook delivery');
    assert.ok(sent, 'the delivery, in the same trace');
    assert.equal(sent.parentSpanId, write.spanId, 'under the write that made its event');
    assert.equal(sentParent, sent.spanId, 'the receiver is a child of the delivery');
    assert.equal(attribute(sent, 'http.response.status_code'), 200);
    assert.equal(attribute(sent, 'animal_store.outcome'), 'delivered');
    // The request's log line names its trace and span.
    const line = log.lines().find((l) => l.route === '/v1/pets' && l.method === 'POST');
    assert.equal(line?.trace_id, traceId);
    assert.equal(line?.span_id, request.spanId);
    // So does its entry in the request log.
    await t.app.requestLog.flush();
    const entry = await t.app.inject({
      url: `/v1/requests/${created.headers.get('x-request-id')}`,
      headers: tenant.headers,
    });
    assert.equal(entry.json().traceId, traceId);
    // No secret in any span: the key, the endpoint's secret.
    assert.ok(!JSON.stringify(collector.spans()).includes(tenant.key));
  });

  it('starts a trace of its own for a request without one, and keeps the event’s context', async () => {
    const category = await createCategory(t.app, tenant, 'Untraced');
    const pet = await createPet(t.app, tenant, { categoryId: category.id });
    const rows = await sql<{ traceparent: string | null }>`
      select traceparent from events where account_id = ${tenant.accountId}
      order by id desc limit 1`.execute(t.database.reader);
    const stored = rows.rows[0]?.traceparent;
    assert.match(String(stored), /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    await t.app.tracing.flush();
    const spans = collector.spans();
    const trace = spans.filter((s) => s.traceId === String(stored).split('-')[1]);
    const request = trace.find((s) => s.name === 'POST /v1/pets');
    assert.ok(request, 'the request, in the trace of the event it wrote');
    assert.equal(request.parentSpanId ?? '', '', 'a root span');
    const write = trace.find((s) => s.spanId === String(stored).split('-')[2]);
    assert.equal(write?.name, 'store write', "the event holds its write's context");
    assert.ok(pet.id > 0);
  });
});

describe('traces off (no OTLP endpoint)', () => {
  it('sends no traceparent, stores none, and writes no trace ids in the log', async () => {
    const receiver = await new Sink().start();
    const log = captureLog();
    const t = await startApp({
      ownStore: true,
      env: { ...FAST, LOG_LEVEL: 'info' },
      logStream: log.stream,
    });
    try {
      assert.equal(t.app.tracing.enabled, false);
      const tenant = await newTenant(t.app);
      await addEndpoint(t.app, tenant, `${receiver.url}/hook`, ['pet.created']);
      await createPet(t.app, tenant, { categoryId: (await createCategory(t.app, tenant)).id });
      await until(() => receiver.bodies.length === 1, 'the delivery');
      assert.equal(receiver.bodies[0]?.headers.traceparent, undefined);
      const rows = await sql<{ traceparent: string | null }>`
        select traceparent from events where account_id = ${tenant.accountId}`.execute(
        t.database.reader,
      );
      assert.ok(rows.rows.every((row) => row.traceparent === null));
      assert.ok(log.lines().every((line) => line.trace_id === undefined));
    } finally {
      await t.close();
      await receiver.close();
    }
  });
});
