/**
 * A live service for the SDK's tests: the app of the root test helpers (real SQLite, or
 * PostgreSQL and Redis when TEST_DATABASE_URL / TEST_REDIS_URL are set) listening on
 * 127.0.0.1, and a small reverse proxy to stand for another address of it.
 */
import { once } from 'node:events';
import {
  createServer,
  type IncomingMessage,
  request,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Clock } from '../../../src/clock.js';
import { newTenant, startApp, type Tenant, type TestApp } from '../../../test/helpers.js';
import type { Plan } from '../src/types.js';

export interface Live {
  t: TestApp;
  /** `http://127.0.0.1:<port>` */
  origin: string;
  tenant(plan?: Plan): Promise<Tenant>;
  close(): Promise<void>;
}

export async function live(
  options: { clock?: Clock; env?: Record<string, string>; ownStore?: boolean } = {},
) {
  const t = await startApp({
    ...(options.clock && { clock: options.clock }),
    ...(options.ownStore && { ownStore: true }),
    env: { APP_ENV: 'development', ...options.env },
  });
  const origin = await t.app.listen({ host: '127.0.0.1', port: 0 });
  return {
    t,
    origin,
    tenant: (plan?: Plan) => newTenant(t.app, plan ? { plan } : {}),
    close: () => t.close(),
  } satisfies Live;
}

export interface ForwardingServer {
  origin: string;
  /** `METHOD path` of every request forwarded. */
  seen: string[];
  close(): Promise<void>;
}

/**
 * Forwards every request to `target` as it came (the Host header too, so the service builds
 * its links on the proxy's address), unless `serve` answers it first.
 */
export async function proxy(
  target: string,
  serve?: (req: IncomingMessage, res: ServerResponse) => boolean,
): Promise<ForwardingServer> {
  const { hostname, port } = new URL(target);
  const seen: string[] = [];
  const server: Server = createServer((req, res) => {
    if (serve?.(req, res)) return;
    seen.push(`${req.method} ${req.url}`);
    const upstream = request(
      { host: hostname, port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export interface Received {
  path: string;
  headers: IncomingMessage['headers'];
  /** The body exactly as it came. */
  body: Buffer;
}

export interface Receiver {
  /** `http://127.0.0.1:<port>` */
  origin: string;
  received: Received[];
  close(): Promise<void>;
}

/** A webhook receiver: answers every POST 200 and keeps what came, headers and raw body. */
export async function receiver(): Promise<Receiver> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(200).end('ok');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
