import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';

/** Requests tracked before the answered ones are let go; then twice as many as remain. */
const SWEEP_AT = 256;
/** While closing, how often requests still being answered are looked at again. */
const POLL_MS = 10;

/**
 * Where the process is in its life. Starting: it listens, but its database or Redis has not
 * answered yet (or the migrations have not run), so API requests answer 503 and /readyz says
 * not ready. Serving. Draining: shutting down, /readyz 503 so balancers move away.
 *
 * It also knows which requests are still being answered. A client that goes away does not stop
 * its request: the handler runs on, writes, and answers a closed connection, after the server
 * itself has closed (Fastify's close waits for connections, not for handlers). What the
 * requests use (the database, Redis, the worker) closes only once `answered` resolves.
 */
export class Lifecycle {
  starting = true;
  draining = false;
  /** Responses not known to be answered yet (`writableEnded`: Fastify is done with them). */
  private readonly unanswered = new Set<ServerResponse>();
  private sweepAt = SWEEP_AT;

  constructor(
    /** What begins once the dependencies answer (the message worker). */
    private readonly onServe: () => void,
  ) {}

  /** The dependencies answer and the schema is current: requests are served from now on. */
  serve(): void {
    if (!this.starting) return;
    this.starting = false;
    this.onServe();
  }

  /** A request began: it counts as in flight until its answer is written, or given up on by a
   * closed connection (Node then ends the response all the same). */
  began(response: ServerResponse): void {
    if (this.unanswered.size >= this.sweepAt) {
      this.sweep();
      // Many requests truly in flight: sweep again only once as many more have begun.
      this.sweepAt = Math.max(SWEEP_AT, 2 * this.unanswered.size);
    }
    this.unanswered.add(response);
  }

  /** Resolves once every request begun has been answered, to its client or to a closed
   * connection. Called once no request can begin (the listener closed). */
  async answered(): Promise<void> {
    for (this.sweep(); this.unanswered.size > 0; this.sweep()) await sleep(POLL_MS);
  }

  private sweep(): void {
    for (const response of this.unanswered) {
      if (response.writableEnded) this.unanswered.delete(response);
    }
  }
}

/** Paths served while starting: they need neither the database nor Redis. */
const SERVED_WHILE_STARTING =
  /^\/(?:healthz|readyz|metrics|docs|favicon\.(?:ico|svg)|v1\/openapi\.json)(?:[/?]|$)/;

export function servedWhileStarting(url: string): boolean {
  return SERVED_WHILE_STARTING.test(url);
}
