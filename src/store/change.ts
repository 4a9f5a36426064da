import type { Writer } from './database.js';
import type { WriteOptions } from './group-commit.js';
import type { Tx } from './handles.js';

/**
 * One unit of work: a change the domain describes and whoever owns the request runs, as one
 * write. A route runs it through its idempotency record (src/http/idempotency.ts), which adds
 * the kept answer to the same transaction; the CLI, the portal's plain forms and the tests run
 * it with `commit`. The domain never sees how it is run (docs/decisions/0012-unit-of-work.md).
 */
export type Change<T> = Write<T> | Decided<T>;

export interface Write<T> {
  /** The statements, in the write's transaction; waits on nothing but the store. */
  readonly work: (tx: Tx) => Promise<T>;
  /** How the write may run. */
  readonly options: WriteOptions;
  /**
   * Runs once the write is committed and durable, with its outcome: what follows the change
   * without being part of it (a message handed to its worker). Must not fail.
   */
  readonly committed?: (outcome: T) => Promise<void>;
}

/** An outcome decided before any write (an input refused): nothing to change. */
export interface Decided<T> {
  readonly decided: T;
}

export function decided<T>(outcome: T): Decided<T> {
  return { decided: outcome };
}

/** Runs `change` in one write of `store`, then its `committed` step; answers its outcome. */
export async function commit<T>(store: Writer, change: Change<T>): Promise<T> {
  if ('decided' in change) return change.decided;
  const outcome = await store.write(change.work, change.options);
  await change.committed?.(outcome);
  return outcome;
}
