import { createHmac, randomUUID } from 'node:crypto';
import { withTimeout } from '../clock.js';
import { randomBase62 } from '../domain/random.js';
import { addressPrefix } from '../http/client-address.js';
import type { Log } from '../log.js';
import type { Metrics } from '../ops/metrics.js';
import { brief, type Outages } from '../ops/outages.js';
import type { Writer } from '../store/database.js';
import { WriteRefusedError } from '../store/group-commit.js';
import type { NewRequestLogSegment } from '../store/tables.js';
import { BytePool } from './byte-pool.js';
import {
  HOUR_MS,
  hourOf,
  type KeptBody,
  keptErrorBody,
  REQUEST_LOG_MAX_ENTRIES,
  redactSecrets,
} from './domain.js';
import { deleteAccountLogOverCap, type HourCounts, insertRequestLog } from './repository.js';
import { type LoggedRequest, SegmentWriter } from './segments.js';

/**
 * The request log's writer (docs/decisions/0013-request-log.md, 0015, 0065): the entries its
 * capture (src/request-log/capture.ts) takes are encoded into their batch's segments once the
 * answers of their turn of the event loop are written, and written with the others of their
 * batch, off the request path.
 */

/** A request as captured when it was answered: what its entry is made of, at the next batch. */
export interface AnsweredRequest {
  accountId: string;
  keyId: string | null;
  /** Its `X-Request-Id`. */
  id: string;
  method: string;
  /** The operation's path pattern (`/v1/pets/{petId}`); undefined when none matched. */
  route: string | undefined;
  /** Path and query, as sent. */
  url: string;
  status: number;
  durationMs: number;
  /** When it arrived (ms since the epoch). */
  at: number;
  /** Undefined once the client has gone (its socket closed). */
  ip: string | undefined;
  idempotencyKey: string | string[] | undefined;
  replayed: boolean;
  /** 4xx and 5xx: the body, redacted and cut (`keptBody`), or null without one. */
  body: KeptBody | null;
  /** 4xx and 5xx: the Error answered, as sent (redacted and cut as it is encoded). */
  errorBody: string | null;
  /** How many requests it stands for (a summary of refusals: `Refusals`); 1 if not said. */
  count?: number;
  /** The trace it was a span of, while traces are on. */
  traceId?: string | null;
}

/** The code of an Error answer; null for any other body. */
function errorCodeOf(body: string | null): string | null {
  if (!body) return null;
  try {
    const { code } = JSON.parse(body) as { code?: unknown };
    return typeof code === 'string' ? code : null;
  } catch {
    return null;
  }
}

/** Which of the hours' counts a status is added to; none for 1xx and 3xx. */
function countOf(status: number): 's2xx' | 's4xx' | 's5xx' | 's429' | undefined {
  if (status === 429) return 's429';
  if (status >= 200 && status < 300) return 's2xx';
  if (status >= 400 && status < 500) return 's4xx';
  if (status >= 500 && status < 600) return 's5xx';
  return undefined;
}

const MAX_PATH = 2048;

/**
 * What the log keeps of an `Idempotency-Key`: a keyed hash, the same for the same key within an
 * account (so entries of one key can be told together), from which the key cannot be had back:
 * whoever reads the log cannot replay the request it was sent with.
 */
export type KeyHash = (accountId: string, key: string) => string;

/** A KeyHash under the server's key: `ikh_` and 22 characters of an HMAC-SHA256. */
export function idempotencyKeyHash(serverKey: string): KeyHash {
  const mac = createHmac('sha256', 'animal-store request log').update(serverKey).digest();
  return (accountId, key) =>
    `ikh_${createHmac('sha256', mac).update(accountId).update('\0').update(key).digest('base64url').slice(0, 22)}`;
}

/** What a batch's requests share, worked out once a batch (a cache for each, not for an app). */
class Shared<T> {
  private readonly known = new Map<string, T>();
  constructor(private readonly work: (value: string) => T) {}
  of(value: string): T {
    let result = this.known.get(value);
    if (result === undefined) {
      result = this.work(value);
      this.known.set(value, result);
    }
    return result;
  }
}

/** An account's requests in a batch, and their counts by hour (its first instant, in ms). */
interface AccountBatch {
  entries: SegmentWriter;
  hours: Map<number, HourCounts>;
  /** The hour of its last request, and that hour's counts: nearly every request's. */
  hour: number;
  counts: HourCounts | undefined;
}

/**
 * A batch of entries, each encoded into its account's segments as it is added (nothing of a
 * request is held as an object until the batch is written), with the counts of its requests by
 * account and hour.
 */
class LogBatch {
  private readonly accounts = new Map<string, AccountBatch>();
  private readonly clients = new Shared(addressPrefix);
  size = 0;
  /** When the first was added (performance.now()). */
  readonly startedAt = performance.now();
  /** The entry each request is made into, filled again for the next: its segment writer keeps
   * its bytes, not the object. */
  private readonly entry: LoggedRequest = {
    id: '',
    keyId: null,
    method: '',
    route: null,
    path: '',
    status: 0,
    durationMs: 0,
    errorCode: null,
    idempotencyKey: null,
    replayed: false,
    client: null,
    at: 0,
    requestBody: null,
    requestBodyTruncated: false,
    errorBody: null,
    count: 1,
    traceId: null,
  };

  /**
   * @param writer the writer's name in the hours' counts (each writer has its own rows)
   * @param pool where its segments' buffers come from
   * @param keyHash what the log keeps of an `Idempotency-Key`
   */
  constructor(
    private readonly writer: string,
    private readonly pool: BytePool,
    private readonly keyHash: KeyHash,
  ) {}

  add(request: AnsweredRequest): void {
    const query = request.url.indexOf('?');
    const key = Array.isArray(request.idempotencyKey)
      ? request.idempotencyKey[0]
      : request.idempotencyKey;
    let account = this.accounts.get(request.accountId);
    if (account === undefined) {
      account = {
        entries: new SegmentWriter(request.accountId, this.pool),
        hours: new Map(),
        hour: 0,
        counts: undefined,
      };
      this.accounts.set(request.accountId, account);
    }
    const entry = this.entry;
    entry.id = request.id;
    entry.keyId = request.keyId;
    entry.method = request.method;
    entry.route = request.route ?? null;
    entry.path = redactSecrets(
      (query < 0 ? request.url : request.url.slice(0, query)).slice(0, MAX_PATH),
    );
    entry.status = request.status;
    entry.durationMs = request.durationMs;
    entry.errorCode = errorCodeOf(request.errorBody);
    entry.idempotencyKey = key === undefined ? null : this.keyHash(request.accountId, key);
    entry.replayed = request.replayed;
    entry.client = request.ip === undefined ? null : this.clients.of(request.ip);
    entry.at = request.at;
    entry.requestBody = request.body?.text ?? null;
    entry.requestBodyTruncated = request.body?.truncated ?? false;
    entry.errorBody = request.errorBody === null ? null : keptErrorBody(request.errorBody);
    entry.count = request.count ?? 1;
    entry.traceId = request.traceId ?? null;
    account.entries.add(entry);
    const count = countOf(request.status);
    if (count !== undefined) {
      const hour = hourOf(request.at);
      if (hour !== account.hour || account.counts === undefined) {
        account.hour = hour;
        account.counts = account.hours.get(hour) ?? this.newHour(account, request.accountId, hour);
      }
      account.counts[count] += entry.count;
    }
    // Counted once all of it is in.
    this.size++;
  }

  private newHour(account: AccountBatch, accountId: string, hour: number): HourCounts {
    const counts = {
      account_id: accountId,
      hour: new Date(hour).toISOString(),
      writer: this.writer,
      s2xx: 0,
      s4xx: 0,
      s5xx: 0,
      s429: 0,
    };
    account.hours.set(hour, counts);
    return counts;
  }

  /** Its rows: its segments (one per account, unless many or large) and its hours' counts. */
  rows(): { segments: NewRequestLogSegment[]; hours: HourCounts[] } {
    const segments: NewRequestLogSegment[] = [];
    const hours: HourCounts[] = [];
    for (const account of this.accounts.values()) {
      segments.push(...account.entries.segments());
      hours.push(...account.hours.values());
    }
    return { segments, hours };
  }
}

/** A batch's rows made of these requests, as the log's writer `writer` writes them. */
export function rowsOf(
  requests: readonly AnsweredRequest[],
  writer: string,
  keyHash: KeyHash = idempotencyKeyHash('rows'),
): { segments: NewRequestLogSegment[]; hours: HourCounts[] } {
  // A pool that keeps nothing: the rows are the caller's to keep.
  const batch = new LogBatch(writer, new BytePool(0), keyHash);
  for (const request of requests) batch.add(request);
  return batch.rows();
}

export interface RequestLogOptions {
  /** Entries held at most (REQUEST_LOG_BUFFER); past it, entries are dropped and counted. */
  maxBuffered: number;
  /** Entries written in one batch at most; a full batch is written at once. */
  batchSize?: number;
  /** The longest an entry waits for its batch, unless a batch is being written. */
  everyMs?: number;
  /** The longest `close` waits for the last batches; what is not written by then is lost. */
  closeWithinMs?: number;
  /** What is kept of an `Idempotency-Key` (by default, a hash under a key of its own). */
  keyHash?: KeyHash;
  /** The wall clock `AnsweredRequest.at` is read on, in ms (by default Date.now). */
  now?: () => number;
}

/** A summary of refusals: the first refused request past a window's first, and how many. */
interface Summary {
  first: AnsweredRequest | undefined;
  count: number;
  /** Its window's end (ms): a minute after its first refusal, or its hour's end if sooner. */
  until: number;
}

/** The most keys whose refusals are summarised at once; past it, refusals are logged each. */
const MOST_SUMMARIES = 10_000;
export const REFUSAL_WINDOW_MS = 60_000;

/**
 * Refused requests (429: rate limited, or banned) summarised (decision 0065): a key's first
 * refusal of a minute is logged as it comes, the rest of that minute as one entry, the first of
 * them, with their count, once the minute is over.
 */
class Refusals {
  private readonly open = new Map<string, Summary>();

  get size(): number {
    return this.open.size;
  }

  /**
   * Whether the refusal is taken into a summary (nothing else to do with it); false when it is
   * to be logged as it is. `ended` gets the summary its window closed, if any.
   */
  take(request: AnsweredRequest, ended: (summary: AnsweredRequest) => void): boolean {
    const key = `${request.accountId} ${request.keyId ?? ''}`;
    const held = this.open.get(key);
    if (held !== undefined && request.at < held.until) {
      held.first ??= request;
      held.count++;
      return true;
    }
    if (held !== undefined) {
      this.open.delete(key);
      this.end(held, ended);
    }
    if (this.open.size < MOST_SUMMARIES) {
      const until = Math.min(request.at + REFUSAL_WINDOW_MS, hourOf(request.at) + HOUR_MS);
      this.open.set(key, { first: undefined, count: 0, until });
    }
    return false;
  }

  /** Ends the summaries whose window is over at `now` (every one without `now`). */
  endBy(now: number | undefined, ended: (summary: AnsweredRequest) => void): void {
    for (const [key, held] of this.open) {
      if (now !== undefined && now < held.until) continue;
      this.open.delete(key);
      this.end(held, ended);
    }
  }

  private end(held: Summary, ended: (summary: AnsweredRequest) => void): void {
    if (held.first !== undefined) ended({ ...held.first, count: held.count });
  }
}

export const BATCH_SIZE = 5_000;
export const BATCH_EVERY_MS = 200;
/** The most bytes of written segments' buffers kept for the next batches (decision 0064). */
const POOL_BYTES = 8 * 1024 * 1024;

/**
 * The log's buffer and its writer, one per app (docs/decisions/0013-request-log.md, 0015).
 * `add` never waits; the entries taken in a turn of the event loop are encoded into the open
 * batch in its check phase, and batches are written one at a time, each in one
 * `Database.write`. Entries past `maxBuffered`, and a batch that cannot be written, are dropped
 * and counted: a store outage costs the log its entries, never a request its answer; a crash
 * loses what is buffered. Every 10,000 entries it writes of an account, its batch's write also
 * deletes the account's segments past its newest 10,000, so that an account answered `429` at
 * full speed cannot fill the disk between housekeeping's runs.
 */
export class RequestLog {
  /** The entries taken this turn of the event loop, to be encoded at its end. */
  private readonly taken: AnsweredRequest[] = [];
  private encoding: NodeJS.Immediate | undefined;
  /** The batch entries are encoded into, once one is; then full batches waiting their turn. */
  private open: LogBatch | undefined;
  private readonly full: LogBatch[] = [];
  /** Entries in `taken`, `open` and `full`. */
  private waiting = 0;
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> | undefined;
  private closed = false;
  /** Entries were lost for a reason other than an outage (a batch not written, an entry not
   * encoded), and logged; until a batch is written. */
  private failing = false;
  /** This writer's rows of the hours' counts (each process has its own: no lock is shared). */
  private readonly writer = randomBase62(12);
  /** The segments' buffers, given back once their batch is written. */
  private readonly pool = new BytePool(POOL_BYTES);
  /**
   * Entries of each account this writer has written since it last pruned the account (at
   * most PRUNE_TRACKED accounts: past that it starts over, housekeeping pruning the rest).
   */
  private readonly sincePruned = new Map<string, number>();
  private readonly refusals = new Refusals();
  /** Ends the refusals' summaries as their windows close, while there are any. */
  private refusalTimer: NodeJS.Timeout | undefined;
  private readonly maxBuffered: number;
  private readonly batchSize: number;
  private readonly everyMs: number;
  private readonly closeWithinMs: number;
  private readonly keyHash: KeyHash;
  private readonly now: () => number;

  constructor(
    private readonly database: Writer,
    private readonly outages: Pick<Outages, 'isDown' | 'databaseFailed'>,
    private readonly metrics: Pick<
      Metrics,
      'requestLogWritten' | 'requestLogDropped' | 'watchRequestLog'
    >,
    private readonly log: Pick<Log, 'error'>,
    options: RequestLogOptions,
  ) {
    this.maxBuffered = options.maxBuffered;
    this.batchSize = options.batchSize ?? BATCH_SIZE;
    this.everyMs = options.everyMs ?? BATCH_EVERY_MS;
    this.closeWithinMs = options.closeWithinMs ?? 5_000;
    this.keyHash = options.keyHash ?? idempotencyKeyHash(randomUUID());
    this.now = options.now ?? Date.now;
    metrics.watchRequestLog(() => this.waiting);
  }

  /** Buffers made for its segments so far; batches like those before make none (0064). */
  get buffersMade(): number {
    return this.pool.buffersMade;
  }

  /** Entries waiting for their batch's write (not those being written). */
  get buffered(): number {
    return this.waiting;
  }

  /**
   * Takes an answered request's entry, to be written with its batch. Never waits, and does no
   * more than keep it: it is encoded with the others of this turn once their answers are
   * written.
   */
  add(request: AnsweredRequest): void {
    if (this.closed) {
      this.metrics.requestLogDropped('closed');
      return;
    }
    if (request.status === 429 && this.refusals.take(request, this.keep)) {
      this.refusalTimer ??= setInterval(() => this.endRefusals(), REFUSAL_CHECK_MS).unref();
      return;
    }
    this.keep(request);
  }

  private readonly keep = (request: AnsweredRequest): void => {
    if (this.waiting >= this.maxBuffered) {
      this.metrics.requestLogDropped('buffer_full', request.count ?? 1);
      return;
    }
    this.taken.push(request);
    this.waiting++;
    this.encoding ??= setImmediate(this.encodeTaken);
  };

  /** Logs the refusals' summaries whose window is over (`all`: every one, as it stands). */
  private readonly endRefusals = (all = false): void => {
    this.refusals.endBy(all ? undefined : this.now(), this.keep);
    if (this.refusals.size === 0) {
      clearInterval(this.refusalTimer);
      this.refusalTimer = undefined;
    }
  };

  /** Encodes the entries taken into the open batch (a full one goes to be written at once). */
  private readonly encodeTaken = () => {
    clearImmediate(this.encoding);
    this.encoding = undefined;
    const taken = this.taken;
    if (taken.length === 0) return;
    for (const request of taken) {
      try {
        this.open ??= new LogBatch(this.writer, this.pool, this.keyHash);
        this.open.add(request);
      } catch (err) {
        // Nothing should fail to encode; should it, its batch goes with it (decision 0015).
        const lost = (this.open?.size ?? 0) + 1;
        this.open = undefined;
        this.waiting -= lost;
        this.metrics.requestLogDropped('write_failed', lost);
        this.failed(err, lost, 'an entry could not be encoded; its batch was dropped with it');
        continue;
      }
      if (this.open.size === this.batchSize) {
        // A full batch goes now, not at the end of the wait.
        this.full.push(this.open);
        this.open = undefined;
        clearTimeout(this.timer);
        this.timer = undefined;
      }
    }
    // Emptied for the next turn's, not made again: nothing above adds to it.
    taken.length = 0;
    if (this.timer === undefined && this.writing === undefined) this.schedule();
  };

  /** Writes every entry buffered now, and what is still being written; resolves once done. */
  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    // Summaries of refusals too, as they stand.
    this.endRefusals(true);
    await this.writing;
    this.encodeTaken();
    // `waiting` counts the entries in batches, each of which holds one at least.
    while (this.waiting > 0) await this.writeNext();
  }

  /**
   * Writes what is left, waiting `closeWithinMs` at most (a store that does not answer must
   * not hold the shutdown), and takes no more entries. Safe to call more than once.
   */
  async close(): Promise<void> {
    // Its summaries of refusals are logged as they stand, in the last batch.
    this.endRefusals(true);
    this.closed = true;
    // Past the wait, what is not written is lost (`flush` itself never fails: a batch's write
    // counts and logs its own failure).
    await withTimeout(this.flush(), this.closeWithinMs).catch(() => undefined);
  }

  /** The next batch's write: at once when one is full, else once its first entry waited enough. */
  private schedule(): void {
    if (this.closed) return;
    let delay = 0;
    if (this.full.length === 0) {
      // Entries only taken so far: their check phase encodes them, then schedules.
      if (this.open === undefined) return;
      delay = Math.max(0, this.everyMs - (performance.now() - this.open.startedAt));
    }
    this.timer = setTimeout(this.due, delay);
    this.timer.unref();
  }

  private readonly due = () => {
    this.timer = undefined;
    if (this.writing === undefined && this.waiting > 0) void this.writeNext();
  };

  /** Writes the first full batch, else the open one; nothing when no entry waits. */
  private writeNext(): Promise<void> {
    // Every entry taken is in a batch before one is chosen: none is left when none waits.
    this.encodeTaken();
    const batch = this.full.shift() ?? this.open;
    if (batch === undefined) return Promise.resolve();
    if (batch === this.open) this.open = undefined;
    this.waiting -= batch.size;
    const writing = this.write(batch).finally(() => {
      this.writing = undefined;
      if (this.timer === undefined) this.schedule();
    });
    this.writing = writing;
    return writing;
  }

  /** Writes a batch (it holds an entry at least: one that could not be encoded took its batch
   * with it). */
  private async write(batch: LogBatch): Promise<void> {
    // While the database is away, batches are dropped at once: waiting on it would only hold
    // the buffer full.
    if (this.outages.isDown('database')) {
      this.metrics.requestLogDropped('write_failed', batch.size);
      return;
    }
    try {
      const { segments, hours } = batch.rows();
      const prune = this.dueForPruning(segments);
      // Statements deciding nothing on what was read before them: a blind write.
      await this.database.write(
        async (tx) => {
          await insertRequestLog(tx, segments, hours);
          for (const accountId of prune) {
            await deleteAccountLogOverCap(tx, accountId, REQUEST_LOG_MAX_ENTRIES);
          }
        },
        { blind: true },
      );
      for (const accountId of prune) this.sincePruned.delete(accountId);
      // Written: nothing reads their bytes any more. (A batch that failed leaves its buffers to
      // the collector: decision 0064.)
      for (const { ids, entries, bodies } of segments) {
        for (const bytes of [ids, entries, bodies]) {
          if (bytes !== null && typeof bytes !== 'string') this.pool.give(bytes);
        }
      }
      this.failing = false;
      this.metrics.requestLogWritten(batch.size);
    } catch (err) {
      this.metrics.requestLogDropped('write_failed', batch.size);
      // Shutting down (the store closed first): nothing to fix.
      if (err instanceof WriteRefusedError && err.reason === 'closing') return;
      if (this.outages.databaseFailed(err)) return;
      this.failed(err, batch.size, 'a batch could not be written and was dropped');
    }
  }

  /** Logs entries lost for a reason other than an outage: once, until a batch is written. */
  private failed(err: unknown, entries: number, what: string): void {
    if (this.failing) return;
    this.failing = true;
    this.log.error(
      { error: brief(err), entries },
      `request log: ${what} (logged once, until a batch is written)`,
    );
  }

  /**
   * The accounts this batch brings to REQUEST_LOG_MAX_ENTRIES entries written since they were
   * last pruned: their entries past the newest 10,000 are deleted by the batch's write.
   */
  private dueForPruning(segments: readonly NewRequestLogSegment[]): string[] {
    if (this.sincePruned.size > PRUNE_TRACKED) this.sincePruned.clear();
    const due = new Set<string>();
    for (const { account_id: accountId, size } of segments) {
      const written = (this.sincePruned.get(accountId) ?? 0) + size;
      this.sincePruned.set(accountId, written);
      if (written >= REQUEST_LOG_MAX_ENTRIES) due.add(accountId);
    }
    return [...due];
  }
}

/** How often open summaries of refusals are checked for their window's end. */
const REFUSAL_CHECK_MS = 1_000;

/** The most accounts a writer counts entries of between prunes. */
const PRUNE_TRACKED = 10_000;
