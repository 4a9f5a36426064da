import { BytePool } from '../byte-pool.js';
import type { ReadDb } from '../store/handles.js';
import { entriesText, readSegments, type SegmentFilter } from '../store/request-log-repository.js';
import type { NewRequestLogSegment } from '../store/tables.js';

/**
 * The request log's stored form (docs/decisions/0015-request-log-segments.md): each batch
 * writes, for each account, a segment of that account's entries, oldest first, as one JSON
 * array of positional arrays. A segment is written once and never changed; it is read newest
 * first, and its entries are checked one by one. This module owns the format: what a stored
 * entry holds and in which place, how entries make segments, and how a read walks them.
 */

/** An entry of the log as it is stored and read back. */
export interface LoggedRequest {
  /** Its `X-Request-Id`. */
  id: string;
  keyId: string | null;
  method: string;
  /** The operation's path pattern (`/v1/pets/{petId}`); null when none matched. */
  route: string | null;
  /** The path, without the query. */
  path: string;
  status: number;
  durationMs: number;
  /** The Error's `code`, on a 4xx or 5xx. */
  errorCode: string | null;
  idempotencyKey: string | null;
  replayed: boolean;
  /** An IPv4 /24 or an IPv6 /64; null when the client had gone. */
  client: string | null;
  /** When it arrived, in ms since the epoch. */
  at: number;
  /** 4xx and 5xx: the body, redacted, at most 4 KB; null without one. */
  requestBody: string | null;
  requestBodyTruncated: boolean;
  /** 4xx and 5xx: the Error answered, as JSON text. */
  errorBody: string | null;
}

/**
 * An entry's places in its array (SegmentWriter writes them in this order). New fields only ever
 * go at the end, so that segments written before them still read (a missing place reads as
 * null). A success stops after `At`. Numbers are small integers, which cost a fraction of a
 * 13-digit time or a fraction to write: the time is ms after the segment's `first_at`, the
 * duration whole µs. The places of REPEATED hold `0` where the entry has what the entry before
 * it in the segment has (an account's requests mostly share their key, method, route, path and
 * client): the first entry of a value in a segment spells it out, so a segment holds, as JSON
 * text, every value any of its entries has.
 */
const Place = {
  Id: 0,
  KeyId: 1,
  Method: 2,
  Route: 3,
  Path: 4,
  Status: 5,
  DurationUs: 6,
  ErrorCode: 7,
  IdempotencyKey: 8,
  Replayed: 9,
  Client: 10,
  At: 11,
  RequestBody: 12,
  RequestBodyTruncated: 13,
  ErrorBody: 14,
} as const;

/** The places that hold `0` when the entry has what the entry before it has. */
const REPEATED = [Place.KeyId, Place.Method, Place.Route, Place.Path, Place.Client] as const;
/** What such a place holds then (SegmentWriter writes it as the character `0`). */
const AS_BEFORE = 0;

const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);

/** A segment's entries, oldest first; `firstAt` is its `first_at`. */
export function segmentEntries(
  entries: string | Uint8Array,
  firstAt: Date | string,
): LoggedRequest[] {
  const base = new Date(firstAt).getTime();
  let before: unknown[] = [];
  return (JSON.parse(entriesText(entries)) as unknown[][]).map((places) => {
    for (const place of REPEATED) if (places[place] === AS_BEFORE) places[place] = before[place];
    before = places;
    return entryOf(places, base);
  });
}

/** An entry of its places, its `at` counted from `base`. */
function entryOf(places: unknown[], base: number): LoggedRequest {
  return {
    id: String(places[Place.Id]),
    keyId: text(places[Place.KeyId]),
    method: String(places[Place.Method]),
    route: text(places[Place.Route]),
    path: String(places[Place.Path]),
    status: Number(places[Place.Status]),
    durationMs: Number(places[Place.DurationUs]) / 1000,
    errorCode: text(places[Place.ErrorCode]),
    idempotencyKey: text(places[Place.IdempotencyKey]),
    replayed: places[Place.Replayed] === 1,
    client: text(places[Place.Client]),
    at: base + Number(places[Place.At]),
    requestBody: text(places[Place.RequestBody]),
    requestBodyTruncated: places[Place.RequestBodyTruncated] === 1,
    errorBody: text(places[Place.ErrorBody]),
  };
}

/** A segment's most entries… */
export const SEGMENT_MAX_ENTRIES = 2_000;
/**
 * …and about its most bytes (bodies are at most 4 KB of UTF-8 each): a read takes segments 16
 * at a time, whatever is in them.
 */
export const SEGMENT_MAX_BYTES = 512 * 1024;

/** Nothing held: a segment's text takes its buffer when its first entry is written. */
const NO_BYTES = Buffer.alloc(0);

/**
 * JSON text written straight into a growing byte buffer: a request's entry costs no string of
 * its own and no object. (JSON.stringify of its places, then Buffer.write of that text, was
 * the larger part of what the log cost a request: 5.7% of a server's samples under a GET load.)
 * Its buffers come from a pool (grown by taking a larger one and giving the last back), and
 * what it takes out is a view of one, given back to the pool once written.
 */
class JsonBytes {
  private bytes: Buffer = NO_BYTES;
  /** The size to start a segment with: the last one's, had it filled up (the next is likely
   * to as well), else the smallest. */
  private startAt = 0;
  length = 0;

  constructor(private readonly pool: BytePool) {}

  /** Makes room for `more` bytes. */
  reserve(more: number): void {
    if (this.length + more <= this.bytes.length) return;
    const bytes = this.pool.take(Math.max(this.length + more, this.startAt, 2 * this.bytes.length));
    this.bytes.copy(bytes, 0, 0, this.length);
    this.pool.give(this.bytes);
    this.bytes = bytes;
  }

  /** One ASCII character. */
  char(code: number): void {
    this.bytes[this.length++] = code;
  }

  /**
   * A JSON string (or null); the number 0 instead when `asBefore`. Makes room for itself: the
   * buffer grows by what is written, not by a bound on it (a 4 KB body is up to 24 KB escaped).
   */
  string(value: string | null, asBefore = false): void {
    if (asBefore) this.char(0x30);
    else if (value === null) {
      this.char(0x6e); // 'null'
      this.char(0x75);
      this.char(0x6c);
      this.char(0x6c);
    } else if (this.plain(value)) {
      // Written as it was checked.
    } else {
      const json = JSON.stringify(value);
      this.reserve(Buffer.byteLength(json) + FIXED_BYTES);
      this.length += this.bytes.write(json, this.length);
    }
  }

  /**
   * A string JSON writes as it is (printable ASCII but `"` and `\`), between quotes, checked
   * and copied a character at a time; false, and nothing written, for one that needs escaping
   * (a body or an Error: at its second character). For an id or a path, nearly every string
   * of an entry, a regular expression and Buffer.write cost several times more: each is a call
   * out of the compiled code.
   */
  private plain(value: string): boolean {
    this.reserve(value.length + 2 + FIXED_BYTES);
    const bytes = this.bytes;
    let at = this.length + 1;
    for (let i = 0; i < value.length; i++, at++) {
      const code = value.charCodeAt(i);
      if (code < 0x20 || code > 0x7e || code === 0x22 || code === 0x5c) return false;
      bytes[at] = code;
    }
    bytes[this.length] = 0x22;
    bytes[at] = 0x22;
    this.length = at + 1;
    return true;
  }

  /** Bytes held, written or not. */
  get capacity(): number {
    return this.bytes.length;
  }

  /** An integer, as JSON writes it (null if it is none). */
  integer(value: number): void {
    if (!Number.isSafeInteger(value)) {
      this.string(null);
      return;
    }
    let rest = value;
    if (rest < 0) {
      this.char(0x2d); // '-'
      rest = -rest;
    }
    let digits = 1;
    for (let power = 10; power <= rest; power *= 10) digits++;
    // Written from its last digit back.
    this.length += digits;
    for (let at = this.length - 1; digits > 0; digits--, at--) {
      this.bytes[at] = 0x30 + (rest % 10);
      rest = Math.floor(rest / 10);
    }
  }

  /**
   * The bytes written (`full`: the segment closed at a limit), as a view of its buffer (the
   * pool's again once they are written), and the text emptied for the next segment. Bytes, not
   * a string: SQLite stores them as they are, where a string would be made here and turned back
   * into the same bytes there (twice the work, and a large string for the collector).
   */
  take(full: boolean): Buffer {
    const taken = this.bytes.subarray(0, this.length);
    this.startAt = full ? this.bytes.length : 0;
    this.bytes = NO_BYTES;
    this.length = 0;
    return taken;
  }
}

/**
 * The most bytes an entry's text takes but for its strings (brackets, commas, numbers, nulls
 * and `0`s), and, after any string, what may follow it in the entry.
 */
const FIXED_BYTES = 96;

/** The most bytes an entry's text takes (a character escaped takes six). */
function mostBytes(entry: LoggedRequest): number {
  return (
    FIXED_BYTES +
    6 *
      (entry.id.length +
        (entry.keyId?.length ?? 0) +
        entry.method.length +
        (entry.route?.length ?? 0) +
        entry.path.length +
        (entry.errorCode?.length ?? 0) +
        (entry.idempotencyKey?.length ?? 0) +
        (entry.client?.length ?? 0) +
        (entry.requestBody?.length ?? 0) +
        (entry.errorBody?.length ?? 0))
  );
}

/**
 * One account's entries of a batch, written as segment text as each is added: what a batch
 * holds of an entry until it is written is its bytes (outside V8's heap), not an object, so a
 * request leaves nothing behind for the garbage collector to copy while it waits. Entries make
 * as few segments as the limits allow (one, unless they are many or large), in the order
 * added. A segment's `first_at` is the arrival of its first entry; an entry that arrived
 * before it (a slow request answered after a quick one) has a negative offset.
 */
export class SegmentWriter {
  private readonly done: NewRequestLogSegment[] = [];
  private readonly text: JsonBytes;
  private entries = 0;
  private errors = 0;
  private base = 0;
  private last = 0;
  /** What the segment's last entry had in the places that may repeat (REPEATED): its own
   * copy, so that a caller may fill one entry object again for the next request. */
  private readonly before: Pick<LoggedRequest, 'keyId' | 'method' | 'route' | 'path' | 'client'> = {
    keyId: null,
    method: '',
    route: null,
    path: '',
    client: null,
  };
  /** Entries added, in every segment. */
  size = 0;

  /**
   * @param pool where its segments' buffers come from: a segment's `entries` is a view of one,
   *   to be given back once written (by default a pool that keeps none)
   */
  constructor(
    readonly accountId: string,
    pool = new BytePool(0),
  ) {
    this.text = new JsonBytes(pool);
  }

  /** The bytes its text holds, written or not: at most twice what was written, or, after a
   * segment that filled up, that segment's size. */
  get bytesHeld(): number {
    return this.text.capacity;
  }

  /** Writes an entry into the open segment; keeps nothing of `entry` itself. */
  add(entry: LoggedRequest): void {
    const most = mostBytes(entry);
    if (
      this.entries === SEGMENT_MAX_ENTRIES ||
      (this.entries > 0 && this.text.length + most > SEGMENT_MAX_BYTES)
    ) {
      this.close(true);
    }
    if (this.entries === 0) this.base = Math.round(entry.at);
    const text = this.text;
    const before = this.before;
    const repeats = this.entries > 0;
    // Its strings make room for themselves as they are written.
    text.reserve(FIXED_BYTES + 2);
    text.char(this.entries === 0 ? 0x5b : 0x2c); // the segment's '[', or ','
    text.char(0x5b); // the entry's '['
    // Place by place, in Place's order; the repeats compared field by field (a keyed lookup,
    // `entry[place]`, cost a capture 0.13 µs more).
    text.string(entry.id);
    text.char(0x2c);
    text.string(entry.keyId, repeats && entry.keyId === before.keyId);
    text.char(0x2c);
    text.string(entry.method, repeats && entry.method === before.method);
    text.char(0x2c);
    text.string(entry.route, repeats && entry.route === before.route);
    text.char(0x2c);
    text.string(entry.path, repeats && entry.path === before.path);
    text.char(0x2c);
    text.integer(entry.status);
    text.char(0x2c);
    text.integer(Math.round(entry.durationMs * 1000));
    text.char(0x2c);
    text.string(entry.errorCode);
    text.char(0x2c);
    text.string(entry.idempotencyKey);
    text.char(0x2c);
    text.integer(entry.replayed ? 1 : 0);
    text.char(0x2c);
    text.string(entry.client, repeats && entry.client === before.client);
    text.char(0x2c);
    text.integer(Math.round(entry.at - this.base));
    if (entry.requestBody !== null || entry.errorBody !== null) {
      text.char(0x2c);
      text.string(entry.requestBody);
      text.char(0x2c);
      text.integer(entry.requestBodyTruncated ? 1 : 0);
      text.char(0x2c);
      text.string(entry.errorBody);
    }
    text.char(0x5d); // the entry's ']'
    this.entries++;
    this.size++;
    before.keyId = entry.keyId;
    before.method = entry.method;
    before.route = entry.route;
    before.path = entry.path;
    before.client = entry.client;
    if (entry.status >= 400) this.errors++;
    const at = Math.round(entry.at);
    if (this.entries === 1 || at > this.last) this.last = at;
  }

  /** Its segments, the last one closed; the writer is then empty. */
  segments(): NewRequestLogSegment[] {
    this.close(false);
    return this.done.splice(0);
  }

  private close(full: boolean): void {
    if (this.entries === 0) return;
    this.text.reserve(1);
    this.text.char(0x5d); // ']'
    this.done.push({
      account_id: this.accountId,
      size: this.entries,
      errors: this.errors,
      first_at: new Date(this.base).toISOString(),
      last_at: new Date(this.last).toISOString(),
      entries: this.text.take(full),
    });
    this.entries = 0;
    this.errors = 0;
  }
}

/**
 * Where a read stopped: the last entry it answered (its segment, its place there) and how many
 * entries, from the newest, it walked through to reach it.
 */
export interface LogPosition {
  seq: number;
  index: number;
  walked: number;
}

export interface LogWalk {
  /** Entries that arrived before this instant (ms) are not shown. */
  since: number;
  /** The newest this many of the account's entries are shown, no others. */
  visible: number;
  /** Start after this entry; from the newest without one. */
  after?: LogPosition | undefined;
  /** What an entry must be to be answered… */
  matches: (entry: LoggedRequest) => boolean;
  /** …and what the segments of such entries must be, tested in the store (never stricter). */
  segments?: Omit<SegmentFilter, 'since' | 'atOrBefore' | 'take'>;
  /** Stops after this many. */
  take: number;
}

/** Segments read at a time. */
const SEGMENTS_A_READ = 16;

/**
 * The account's entries that match, newest first (the last written first, and within a
 * segment the last answered), each with its position, among the newest `visible` entries at
 * most: a read's work is bounded by what is shown, however many entries the account holds
 * until housekeeping prunes them.
 */
export async function walkLog(
  db: ReadDb,
  accountId: string,
  walk: LogWalk,
): Promise<Array<{ entry: LoggedRequest; position: LogPosition }>> {
  const found: Array<{ entry: LoggedRequest; position: LogPosition }> = [];
  let walked = walk.after?.walked ?? 0;
  let atOrBefore = walk.after?.seq;
  for (;;) {
    const segments = await readSegments(db, accountId, {
      ...walk.segments,
      since: new Date(walk.since).toISOString(),
      atOrBefore,
      take: SEGMENTS_A_READ,
    });
    for (const segment of segments) {
      // Entries [0, end) of this segment are still to walk.
      const end = segment.seq === walk.after?.seq ? walk.after.index : segment.size;
      if (segment.entries === null) {
        walked += end;
        if (walked >= walk.visible) return found;
        continue;
      }
      const entries = segmentEntries(segment.entries, segment.firstAt);
      for (let index = end - 1; index >= 0; index--) {
        if (walked >= walk.visible) return found;
        walked++;
        const entry = entries[index];
        if (entry === undefined || entry.at < walk.since || !walk.matches(entry)) continue;
        found.push({ entry, position: { seq: segment.seq, index, walked } });
        if (found.length === walk.take) return found;
      }
    }
    const last = segments.at(-1);
    if (segments.length < SEGMENTS_A_READ || last === undefined) return found;
    atOrBefore = last.seq - 1;
  }
}
