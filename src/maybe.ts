/**
 * A value now, or a promise of it. The hot path (authentication and rate limiting) answers
 * synchronously when it has what it needs in memory, and each `await` it skips saves a promise
 * and a trip through the microtask queue on every request.
 */
export type MaybePromise<T> = T | Promise<T>;

/** `next(value)`: at once for a value, once settled for a promise (whose rejection passes on). */
export function andThen<T, U>(
  value: MaybePromise<T>,
  next: (value: T) => MaybePromise<U>,
): MaybePromise<U> {
  return value instanceof Promise ? value.then(next) : next(value);
}
