import type { ErrorCode } from '../errors.js';

/**
 * Expected outcomes ("already sold", "duplicate email") are values, not exceptions:
 * a service returns a Failure and the HTTP layer turns it into an Error body.
 * An exception means something is broken.
 */
export interface Failure<C extends ErrorCode = ErrorCode> {
  ok: false;
  code: C;
  message: string;
}

export interface Success<T> {
  ok: true;
  value: T;
}

export type Result<T, C extends ErrorCode = ErrorCode> = Success<T> | Failure<C>;

export function ok<T>(value: T): Success<T> {
  return { ok: true, value };
}

export function fail<C extends ErrorCode>(code: C, message: string): Failure<C> {
  return { ok: false, code, message };
}
