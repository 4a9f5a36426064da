import type { Chore } from '../ops/housekeeping.js';
import {
  hourOf,
  REQUEST_LOG_MAX_ENTRIES,
  requestHoursKeptSince,
  requestLogKeptSince,
} from './domain.js';
import {
  deleteOldRequestHours,
  deleteOldRequestLog,
  deleteRequestLogOverCap,
} from './repository.js';

const logSince = (now: string) => requestLogKeptSince(new Date(now));

/** The hour of the oldest entry kept: counts since then are never fewer than the entries. */
const logHoursSince = (now: string) => new Date(hourOf(Date.parse(logSince(now)))).toISOString();

/** What runs out of the log: its segments past 7 days, an account's entries past its newest
 * 10,000, and the hourly counts past 7 days. */
export const requestLogChores: Readonly<Record<string, Chore>> = {
  'request log segments': (tx, now, limit) => deleteOldRequestLog(tx, logSince(now), limit),
  'request log segments past 10,000': (tx, now, limit) =>
    deleteRequestLogOverCap(tx, logHoursSince(now), REQUEST_LOG_MAX_ENTRIES, limit),
  'request counts': (tx, now, limit) =>
    deleteOldRequestHours(tx, requestHoursKeptSince(new Date(now)), limit),
};
