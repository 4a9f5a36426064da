import type { ReadDb, Tx } from '../store/database.js';
import { recordCall, totalCalls } from '../store/deprecated-calls-repository.js';

export interface Deprecation {
  operationId: string;
  /** When the deprecation was announced (RFC 9745 `Deprecation` header). */
  deprecatedAt: Date;
  /** When the operation stops answering (RFC 8594 `Sunset` header); 410 from then on. */
  sunsetAt: Date;
  /** The request to make instead, as a path under /v1 (given the deprecated request's path
   * parameters, as sent), and in words. */
  successorPath: (params: Readonly<Record<string, unknown>>) => string;
  successor: string;
}

/** The seed: GET /pets/{petId} is deprecated and removed on 5 December 2030. */
export const GET_PET: Deprecation = {
  operationId: 'getPet',
  deprecatedAt: new Date('2026-01-01T00:00:00Z'),
  sunsetAt: new Date('2030-12-05T00:00:00Z'),
  successorPath: ({ petId }) =>
    typeof petId === 'string' && /^[1-9][0-9]{0,15}$/.test(petId) ? `/pets?id=${petId}` : '/pets',
  successor: 'GET /v1/pets?id={petId}, which reads pets by id (up to 100 at once)',
};

export function isRemoved(deprecation: Deprecation, now: Date): boolean {
  return now.getTime() >= deprecation.sunsetAt.getTime();
}

/** Counts a call of a deprecated operation, so operators can see who still depends on it. */
export function recordDeprecatedCall(
  tx: Tx,
  accountId: string,
  deprecation: Deprecation,
  now: Date,
): Promise<void> {
  return recordCall(tx, accountId, deprecation.operationId, now.toISOString());
}

export function deprecatedCallCount(db: ReadDb, accountId: string): Promise<number> {
  return totalCalls(db, accountId);
}
