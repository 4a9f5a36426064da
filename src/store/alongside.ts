import type { Writer } from './database.js';
import type { WriteOptions } from './group-commit.js';
import type { Tx } from './handles.js';

/**
 * More work for a write's transaction, run after its change and given its outcome: what must
 * commit with the change or not at all (a POST's kept answer, src/http/idempotency.ts).
 */
export interface Alongside<T> {
  /** The write's options, adjusted for the statements this adds (no `oneStatement`). */
  options(options: WriteOptions): WriteOptions;
  run(tx: Tx, outcome: T): Promise<void>;
}

/** `store.write(work, options)`, with `alongside`'s work after `work`'s, in its transaction. */
export function writeWith<T>(
  store: Writer,
  work: (tx: Tx) => Promise<T>,
  options: WriteOptions,
  alongside: Alongside<NoInfer<T>> | undefined,
): Promise<T> {
  if (!alongside) return store.write(work, options);
  return store.write(async (tx) => {
    const outcome = await work(tx);
    await alongside.run(tx, outcome);
    return outcome;
  }, alongside.options(options));
}
