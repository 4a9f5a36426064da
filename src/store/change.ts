import type { Writer } from './database.js';
import type { WriteOptions } from './group-commit.js';
import type { Tx } from './handles.js';

/**
 * One unit of work: a change the domain describes and whoever owns the request runs, as one
 * write, with `commit` below. A POST runs it through its idempotency record
 * (src/http/idempotency.ts), which adds the kept answer to the same transaction. The domain
 * never sees how it is run (docs/decisions/0012-unit-of-work.md).
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

/** A change that writes: `work`, run as one write with `options`. Its outcome's type is the one
 * the caller declares (`NoInfer`: not narrowed to what `work` happens to return). */
export function change<T>(
  work: (tx: Tx) => Promise<NoInfer<T>>,
  options: WriteOptions = {},
): Write<T> {
  return { work, options };
}

/** An outcome decided before any write (an input refused): nothing to change. */
export interface Decided<T> {
  readonly decided: T;
}

export function decided<T>(outcome: T): Decided<T> {
  return { decided: outcome };
}

/** A change's outcome as part of a larger write's transaction `tx` (its own options aside). */
export function within<T>(tx: Tx, change: Change<T>): Promise<T> {
  return 'decided' in change ? Promise.resolve(change.decided) : change.work(tx);
}

/**
 * The one runner of a change: its work in one write of `store`, with `alongside` (what its
 * caller adds to the same transaction once the work is done: a kept answer,
 * src/http/idempotency.ts), then its `committed` step; answers its outcome. Routes, the portal,
 * the CLI and the domain's own use cases run their changes here; only workers, housekeeping
 * and the request log's writer write otherwise.
 */
export async function commit<T>(
  store: Writer,
  change: Change<T>,
  alongside?: (tx: Tx, outcome: T) => Promise<void>,
): Promise<T> {
  if ('decided' in change) return change.decided;
  const work = alongside
    ? async (tx: Tx) => {
        const outcome = await change.work(tx);
        await alongside(tx, outcome);
        return outcome;
      }
    : change.work;
  const outcome = await store.write(work, change.options);
  await change.committed?.(outcome);
  return outcome;
}
