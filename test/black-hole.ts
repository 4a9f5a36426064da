import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A webhook receiver on 127.0.0.1 that accepts every connection and request and never answers:
 * the slowest endpoint there is. Counts what it holds, by path, and the most it held at once.
 */
export class BlackHole {
  private server: Server | undefined;
  url = '';
  /** Requests received, by path. */
  readonly received = new Map<string, number>();
  /** Requests held now, by path. */
  readonly held = new Map<string, number>();
  /** The most held at once, by path and in all. */
  readonly mostHeld = new Map<string, number>();
  mostHeldInAll = 0;
  /** Requests the sender gave up on (their connections closed). */
  ended = 0;

  async start(): Promise<this> {
    this.server = createServer((req) => this.hold(req));
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

  private hold(req: IncomingMessage): void {
    const path = req.url ?? '';
    this.received.set(path, (this.received.get(path) ?? 0) + 1);
    this.held.set(path, (this.held.get(path) ?? 0) + 1);
    this.mostHeld.set(path, Math.max(this.mostHeld.get(path) ?? 0, this.held.get(path) ?? 0));
    this.mostHeldInAll = Math.max(this.mostHeldInAll, this.holding);
    req.resume();
    req.socket.once('close', () => {
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
