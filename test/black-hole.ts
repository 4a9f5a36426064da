import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { as, type Tenant } from './helpers.js';

/**
 * A webhook receiver on 127.0.0.1 that accepts every connection and request and never answers:
 * the slowest endpoint there is. Counts what it holds, by path, and the most it held at once.
 * With `answersFirst`, it answers each path's first request at once (200), and only then goes
 * silent: an endpoint that has answered before, as far as the sender knows.
 */
export class BlackHole {
  private server: Server | undefined;
  url = '';
  /** Requests answered (with `answersFirst`: each path's first). */
  answered = 0;
  /** When each request held now arrived. */
  private readonly arrivals = new Set<{ at: number }>();
  /** Requests received, by path. */
  readonly received = new Map<string, number>();
  /** Requests held now, by path. */
  readonly held = new Map<string, number>();
  /** The most held at once, by path and in all. */
  readonly mostHeld = new Map<string, number>();
  mostHeldInAll = 0;
  /** Requests the sender gave up on (their connections closed). */
  ended = 0;

  constructor(private readonly options: { answersFirst?: boolean } = {}) {}

  async start(): Promise<this> {
    this.server = createServer((req, res) => this.hold(req, res));
    // No server timeouts: only the sender may end a request.
    this.server.requestTimeout = 0;
    this.server.headersTimeout = 0;
    this.server.keepAliveTimeout = 0;
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** Requests held now, over every path. */
  get holding(): number {
    let n = 0;
    for (const count of this.held.values()) n += count;
    return n;
  }

  /** Requests held now that arrived more than `ms` ago. */
  heldLongerThan(ms: number): number {
    const before = Date.now() - ms;
    let n = 0;
    for (const arrival of this.arrivals) if (arrival.at < before) n++;
    return n;
  }

  get receivedInAll(): number {
    let n = 0;
    for (const count of this.received.values()) n += count;
    return n;
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server?.closeAllConnections();
      this.server?.close(() => resolve());
    });
  }

  private hold(req: IncomingMessage, res: ServerResponse): void {
    const path = req.url ?? '';
    const first = !this.received.has(path);
    this.received.set(path, (this.received.get(path) ?? 0) + 1);
    if (first && this.options.answersFirst) {
      this.answered++;
      req.resume();
      req.on('end', () => res.writeHead(200).end('ok'));
      return;
    }
    const arrival = { at: Date.now() };
    this.arrivals.add(arrival);
    this.held.set(path, (this.held.get(path) ?? 0) + 1);
    this.mostHeld.set(path, Math.max(this.mostHeld.get(path) ?? 0, this.held.get(path) ?? 0));
    this.mostHeldInAll = Math.max(this.mostHeldInAll, this.holding);
    req.resume();
    req.socket.once('close', () => {
      this.arrivals.delete(arrival);
      this.held.set(path, (this.held.get(path) ?? 1) - 1);
      this.ended++;
    });
  }
}

/** A receiver on 127.0.0.1 that answers every request with what `answer` says, and records it. */
export class Answerer {
  private server: Server | undefined;
  url = '';
  readonly received: Array<{ path: string; body: string; at: number }> = [];
  answer: (res: ServerResponse) => void = (res) => res.writeHead(200).end('ok');

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        this.received.push({ path: req.url ?? '', body, at: Date.now() });
        this.answer(res);
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  of(path: string): Array<{ path: string; body: string; at: number }> {
    return this.received.filter((r) => r.path === path);
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server?.closeAllConnections();
      this.server?.close(() => resolve());
    });
  }
}

/** An endpoint of the tenant's for pet.created events at `url`; its id. */
export async function addEndpoint(
  app: FastifyInstance,
  tenant: Tenant,
  url: string,
): Promise<string> {
  const res = await as(app, tenant, {
    method: 'POST',
    url: '/v1/webhooks',
    payload: { url, events: ['pet.created'] },
  });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().id;
}

export interface Delivery {
  id: string;
  status: string;
  attempts: number;
  lastStatusCode: number | null;
  nextAttemptAt: string | null;
  lastResponse: string | null;
}

/** The endpoint's deliveries, newest first. */
export async function deliveries(
  app: FastifyInstance,
  tenant: Tenant,
  id: string,
): Promise<Delivery[]> {
  const res = await as(app, tenant, { method: 'GET', url: `/v1/webhooks/${id}/deliveries` });
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}
