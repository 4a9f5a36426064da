/**
 * Where the process is in its life. Starting: it listens, but its database or Redis has not
 * answered yet (or the migrations have not run), so API requests answer 503 and /readyz says
 * not ready. Serving. Draining: shutting down, /readyz 503 so balancers move away.
 */
export class Lifecycle {
  starting = true;
  draining = false;

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
}

/** Paths served while starting: they need neither the database nor Redis. */
const SERVED_WHILE_STARTING =
  /^\/(?:healthz|readyz|metrics|docs|favicon\.(?:ico|svg)|v1\/openapi\.json)(?:[/?]|$)/;

export function servedWhileStarting(url: string): boolean {
  return SERVED_WHILE_STARTING.test(url);
}
