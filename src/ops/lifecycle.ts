import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Log } from '../log.js';

/** Abandoned responses kept before those answered since are let go. */
const SWEEP_AT = 64;
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
  /** The wait for the requests begun to be answered, once it has begun (`answered`). */
  private answering: Promise<number> | undefined;
  /** Requests begun whose responses have not closed. */
  private open = 0;
  /** Responses closed before they were answered (their clients left): a handler runs on. */
  private readonly abandoned = new Set<ServerResponse>();
  /** One listener for every response (no closure a request): `this` is the response. */
  private readonly closed: (this: ServerResponse) => void;

  /** What begins once the dependencies answer (the worker, the dispatcher, housekeeping). */
  private readonly starts: Array<() => void> = [];

  constructor(
    /** How long `answered` waits (within the process's own shutdown deadline, so what closes
     * after it still has time); past it, what is still being answered is given up on, and
     * `log` says so. */
    private readonly closing: { answerWithinMs: number; log: Pick<Log, 'warn'> },
  ) {
    const lifecycle = this;
    this.closed = function (this: ServerResponse) {
      lifecycle.open--;
      if (this.writableEnded) return;
      if (lifecycle.abandoned.size >= SWEEP_AT) lifecycle.sweep();
      lifecycle.abandoned.add(this);
    };
  }

  /** `start` runs once the instance serves (at once if it does already). */
  whenServing(start: () => void): void {
    this.starts.push(start);
    if (!this.starting) start();
  }

  /** The dependencies answer and the schema is current: requests are served from now on. */
  serve(): void {
    if (!this.starting) return;
    this.starting = false;
    for (const start of this.starts) start();
  }

  /** A request began: it is in flight until its response closes, answered; or, when its
   * client left first, until Fastify is done with it (`writableEnded`). Nothing of an answered
   * request is kept: holding responses past their answer cost a fifth of GET's throughput. */
  began(response: ServerResponse): void {
    this.open++;
    response.on('close', this.closed);
  }

  /** Shutting down: /readyz turns 503, and answers end their connections. */
  drain(): void {
    this.draining = true;
  }

  /**
   * Resolves once every request begun has been answered, to its client or to a closed
   * connection, or once its deadline has passed: a handler stuck for good must not keep the
   * process from closing. Called once no request can begin (the listener closed). Resolves to
   * how many requests it gave up on (0 when all were answered); a write among them that
   * reaches the database after it closed is refused with 503, nothing done. Every caller
   * (each plugin's onClose that needs its requests answered) waits for the one wait.
   */
  answered(): Promise<number> {
    this.answering ??= this.waitForAnswers();
    return this.answering;
  }

  private async waitForAnswers(): Promise<number> {
    const { answerWithinMs, log } = this.closing;
    const deadline = Date.now() + answerWithinMs;
    for (this.sweep(); this.unanswered() > 0; this.sweep()) {
      const left = deadline - Date.now();
      if (left <= 0) {
        const requests = this.unanswered();
        log.warn(
          { requests, waitedMs: answerWithinMs },
          'shutdown: gave up waiting for requests still being answered',
        );
        return requests;
      }
      await sleep(Math.min(POLL_MS, left));
    }
    return 0;
  }

  /** Requests begun and not answered yet, those whose clients left included. */
  private unanswered(): number {
    return this.open + this.abandoned.size;
  }

  private sweep(): void {
    for (const response of this.abandoned) {
      if (response.writableEnded) this.abandoned.delete(response);
    }
  }
}

/** Paths served while starting: they need neither the database nor Redis. */
const SERVED_WHILE_STARTING =
  /^\/(?:healthz|readyz|metrics|docs|favicon\.(?:ico|svg)|v1\/openapi\.json)(?:[/?]|$)/;

export function servedWhileStarting(url: string): boolean {
  return SERVED_WHILE_STARTING.test(url);
}
