/**
 * A counted load: exactly the requests given, each timed, over a few keep-alive connections.
 * For figures taken over a number of requests rather than a stretch of time (bench/scale.ts),
 * where each request may be a different page: wrk and autocannon send one request, or a
 * random pick, for a while.
 */
import { Agent, request as send } from 'node:http';
import type { BenchRequest } from './service.js';
import { percentile } from './stats.js';

export interface Timed {
  requests: number;
  p50Ms: number;
  p99Ms: number;
  requestsPerSecond: number;
  /** Answers other than 2xx, and requests that got no answer. */
  errors: number;
  /** The first such answer's status and body, to say what went wrong. */
  firstError?: string;
}

/** One request on `agent`'s connections: its status and body. */
function once(
  agent: Agent,
  base: URL,
  { path, method, headers, body }: BenchRequest,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = send(
      {
        agent,
        host: base.hostname,
        port: base.port,
        path,
        method,
        headers: body === undefined ? headers : { ...headers, 'content-length': body.length },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Sends `requests`, in order, `concurrency` at a time (each connection sends its next once
 * answered), and times each from its send to the end of its answer.
 */
export async function timed(
  base: string,
  requests: readonly BenchRequest[],
  concurrency: number,
): Promise<Timed> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const url = new URL(base);
  const latencies: number[] = [];
  let next = 0;
  let errors = 0;
  let firstError: string | undefined;
  const started = performance.now();
  const connection = async () => {
    for (let i = next++; i < requests.length; i = next++) {
      const request = requests[i] as BenchRequest;
      const sent = performance.now();
      try {
        const { status, text } = await once(agent, url, request);
        if (status < 200 || status >= 300) {
          errors++;
          firstError ??= `${request.method} ${request.path}: ${status} ${text.slice(0, 200)}`;
        }
      } catch (err) {
        errors++;
        firstError ??= `${request.method} ${request.path}: ${(err as Error).message}`;
      }
      latencies.push(performance.now() - sent);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, connection));
  const seconds = (performance.now() - started) / 1000;
  agent.destroy();
  return {
    requests: requests.length,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    requestsPerSecond: requests.length / seconds,
    errors,
    ...(firstError !== undefined && { firstError }),
  };
}
