import type { Failure, Result } from '../domain/result.js';
import { ApiError } from '../errors.js';

/** The value of a service result, or the Error body its failure stands for. */
export function unwrap<T>(result: Result<T>): T {
  if (!result.ok) throw toError(result);
  return result.value;
}

function toError(failure: Failure): ApiError {
  return new ApiError(failure.code, failure.message);
}
