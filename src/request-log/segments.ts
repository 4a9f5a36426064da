import type { ReadDb } from '../store/handles.js';
import type { NewRequestLogSegment } from '../store/tables.js';
import { BytePool } from './byte-pool.js';
import {
  bodiesLine,
  entriesAfter,
  entriesText,
  ID_BUCKETS,
  IDS_HEADER,
  idBucket,
  OFFSET_DIGITS,
  readSegments,
  type SegmentFilter,
  segmentHolding,
} from './repository.js';

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
  /** How many requests the entry stands for: 1, or more for refusals summarised as one
   * (src/request-log/writer.ts). */
  count: number;
  /** The trace it was a span of, while traces are on (docs/decisions/0073-traces.md). */
  traceId: string | null;
}

/**
 * An entry's places in its array (SegmentWriter writes them in this order; decision 0015 says
 * why each is what it is). New fields only ever go at the end, so that segments written before
 * them still read (a missing place reads as null). A success stops after `At`, which is ms after
 * the segment's `first_at`. The places of REPEATED hold `0` where the entry has what the entry
 * before it has, so a segment's text still holds every value any of its entries has. The body
 * places are written in segments made before migration 0016 only; since, bodies are in the
 * segment's `bodies` (decision 0065), and those places hold `null,0,null` where `Count` follows.
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
  Count: 15,
  TraceId: 16,
} as const;

/** The places that hold `0` when the entry has what the entry before it has. */
const REPEATED = [Place.KeyId, Place.Method, Place.Route, Place.Path, Place.Client] as const;
/** What such a place holds then (SegmentWriter writes it as the character `0`). */
const AS_BEFORE = 0;

const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);

/**
 * A segment's entries, oldest first; `firstAt` is its `first_at`, `bodies` its `bodies` (without
 * them, the entries carry none but those written inline before migration 0016).
 */
export function segmentEntries(
  entries: string | Uint8Array,
  firstAt: Date | string,
  bodies: string | Uint8Array | null = null,
): LoggedRequest[] {
  const base = new Date(firstAt).getTime();
  let before: unknown[] = [];
  const read = (JSON.parse(entriesText(entries)) as unknown[][]).map((places) => {
    for (const place of REPEATED) if (places[place] === AS_BEFORE) places[place] = before[place];
    before = places;
    return entryOf(places, base);
  });
  if (bodies !== null) {
    for (const line of entriesText(bodies).split('\n')) {
      if (line !== '') withBodies(read, JSON.parse(line) as unknown[]);
    }
  }
  return read;
}

/** Puts a line of a segment's `bodies` (`[place, request body, truncated, Error]`) on its entry. */
function withBodies(entries: readonly LoggedRequest[], [place, body, truncated, error]: unknown[]) {
  const entry = entries[Number(place)];
  if (entry === undefined) return;
  entry.requestBody = text(body);
  entry.requestBodyTruncated = truncated === 1;
  entry.errorBody = text(error);
}

/** An entry of its places, its `at` counted from `base`. */
function entryOf(places: unknown[], base: number): LoggedRequest {
  const count = places[Place.Count];
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
    count: typeof count === 'number' && Number.isSafeInteger(count) && count > 1 ? count : 1,
    traceId: text(places[Place.TraceId]),
  };
}

/** A segment's most entries… */
export const SEGMENT_MAX_ENTRIES = 2_000;
/**
 * …and about its most bytes of entries, and of bodies (at most 4 KB of UTF-8 each, a request's
 * and an Error): what a read parses of one segment is bounded, whatever is in it.
 */
export const SEGMENT_MAX_BYTES = 512 * 1024;

/** Nothing held: a segment's text takes its buffer when its first entry is written. */
const NO_BYTES = Buffer.alloc(0);

/**
 * JSON text written straight into a growing byte buffer: a request's entry costs no string of
 * its own and no object (decision 0015, "Encoded as captured"). Its buffers come from a pool
 * (decision 0064), grown by taking a larger one and giving the last back; what it takes out is
 * a view of one, given back to the pool once written.
 */
class JsonBytes {
  private bytes: Buffer = NO_BYTES;
  /** The size to start a segment with: the last one's, had it filled up (the next is likely
   * to as well), else the smallest. */
  private startAt = 0;
  length = 0;

  constructor(readonly pool: BytePool) {}

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
   * and copied a character at a time (decision 0015 measured why); false, and nothing written,
   * for one that needs escaping (a body or an Error: at its second character).
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

  /**
   * A request id as it is, no quotes: printable ASCII but the space, which parts the ids (an
   * id is `[\w.-]{1,128}`, src/request-log/writer.ts); any other character is written `_`.
   * Room is made by the caller.
   */
  token(value: string): void {
    for (let i = 0; i < value.length; i++) {
      const code = value.charCodeAt(i);
      this.bytes[this.length++] = code > 0x20 && code < 0x7f ? code : 0x5f;
    }
  }

  /** The bytes written, as a view (this text's until it is cleared). */
  view(): Buffer {
    return this.bytes.subarray(0, this.length);
  }

  /** Empties the text, keeping its buffer for the next. */
  clear(): void {
    this.length = 0;
  }

  release(): void {
    this.pool.give(this.bytes);
    this.bytes = NO_BYTES;
    this.length = 0;
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
   * a string: decision 0015, "Bytes in, bytes stored".
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

/** The most bytes an entry's text takes in `entries` (a character escaped takes six)… */
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
        (entry.traceId?.length ?? 0))
  );
}

/** …and its bodies in `bodies`. */
function mostBodyBytes(entry: LoggedRequest): number {
  return hasBodies(entry)
    ? FIXED_BYTES + 6 * ((entry.requestBody?.length ?? 0) + (entry.errorBody?.length ?? 0))
    : 0;
}

const hasBodies = (entry: LoggedRequest) => entry.requestBody !== null || entry.errorBody !== null;

/**
 * One account's entries of a batch, written as segment text as each is added: a batch holds an
 * entry's bytes, not an object (decision 0015, "Encoded as captured"). Entries make as few
 * segments as the limits allow, in the order added. A segment's `first_at` is the arrival of
 * its first entry; an entry that arrived before it (a slow request answered after a quick one)
 * has a negative offset. Three texts grow together: the entries, their ids and their bodies.
 */
export class SegmentWriter {
  private readonly done: NewRequestLogSegment[] = [];
  private readonly text: JsonBytes;
  /** The open segment's ids, each followed by a space, and the part each goes in. */
  private readonly ids: JsonBytes;
  private readonly buckets = new Uint8Array(SEGMENT_MAX_ENTRIES);
  private readonly bodies: JsonBytes;
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

  /**
   * @param pool where its segments' buffers come from: a segment's `ids`, `entries` and
   *   `bodies` are views of them, to be given back once written (by default a pool that keeps
   *   none)
   */
  constructor(
    readonly accountId: string,
    pool = new BytePool(0),
  ) {
    this.text = new JsonBytes(pool);
    this.ids = new JsonBytes(pool);
    this.bodies = new JsonBytes(pool);
  }

  /** The bytes its texts hold, written or not: at most twice what was written, or, after a
   * segment that filled up, that segment's size. */
  get bytesHeld(): number {
    return this.text.capacity + this.ids.capacity + this.bodies.capacity;
  }

  /** Writes an entry into the open segment; keeps nothing of `entry` itself. */
  add(entry: LoggedRequest): void {
    const most = mostBytes(entry);
    const mostBodies = mostBodyBytes(entry);
    if (
      this.entries === SEGMENT_MAX_ENTRIES ||
      (this.entries > 0 &&
        (this.text.length + most > SEGMENT_MAX_BYTES ||
          this.bodies.length + mostBodies > SEGMENT_MAX_BYTES))
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
    // Place by place, in Place's order; the repeats compared field by field, not by `entry[place]`.
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
    if (entry.count > 1 || entry.traceId !== null) {
      // The body places are empty here (the bodies are apart); then the count, and the trace.
      text.reserve(FIXED_BYTES);
      for (const code of NO_BODIES) text.char(code);
      text.integer(entry.count);
      if (entry.traceId !== null) {
        text.char(0x2c);
        text.string(entry.traceId);
      }
    }
    text.char(0x5d); // the entry's ']'
    this.ids.reserve(entry.id.length + 1);
    this.ids.token(entry.id);
    this.ids.char(0x20);
    this.buckets[this.entries] = idBucket(entry.id);
    if (hasBodies(entry)) {
      // A line each: a lookup finds its entry's (`\n[place,`) and parses that line alone.
      const bodies = this.bodies;
      bodies.reserve(FIXED_BYTES);
      bodies.char(0x0a);
      bodies.char(0x5b);
      bodies.integer(this.entries);
      bodies.char(0x2c);
      bodies.string(entry.requestBody);
      bodies.char(0x2c);
      bodies.integer(entry.requestBodyTruncated ? 1 : 0);
      bodies.char(0x2c);
      bodies.string(entry.errorBody);
      bodies.char(0x5d);
    }
    this.entries++;
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
    this.ids.release();
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
      ids: this.idsInParts(),
      entries: this.text.take(full),
      bodies: this.bodies.length > 0 ? this.bodies.take(full) : null,
    });
    this.entries = 0;
    this.errors = 0;
  }

  /** The open segment's ids in their parts (`ids`: src/request-log/repository.ts), in a buffer
   * of the pool. */
  private idsInParts(): Buffer {
    const written = this.ids.view();
    const sizes = new Array<number>(ID_BUCKETS).fill(0);
    // Each id and its space; a part that holds any starts with a space too.
    for (let i = 0, start = 0; i < this.entries; i++) {
      const end = written.indexOf(0x20, start);
      const bucket = this.buckets[i] ?? 0;
      sizes[bucket] = (sizes[bucket] || 1) + end + 1 - start;
      start = end + 1;
    }
    const starts: number[] = [];
    let total = 0;
    for (const size of sizes) {
      starts.push(IDS_HEADER + total);
      total += size;
    }
    const out = this.ids.pool.take(IDS_HEADER + total).subarray(0, IDS_HEADER + total);
    sizes.forEach((size, bucket) => {
      const end = (starts[bucket] ?? 0) + size - IDS_HEADER;
      out.write(String(end).padStart(OFFSET_DIGITS, '0'), bucket * OFFSET_DIGITS, 'latin1');
      if (size > 0) out[starts[bucket] ?? 0] = 0x20;
    });
    const at = starts.map((start) => start + 1);
    for (let i = 0, start = 0; i < this.entries; i++) {
      const end = written.indexOf(0x20, start);
      const bucket = this.buckets[i] ?? 0;
      written.copy(out, at[bucket], start, end + 1);
      at[bucket] = (at[bucket] ?? 0) + end + 1 - start;
      start = end + 1;
    }
    this.ids.clear();
    return out;
  }
}

/** `,null,0,null,`: a summary's empty body places, before its count. */
const NO_BODIES = Buffer.from(',null,0,null,');

/**
 * Where a read stopped: the last entry it answered, or the last it walked past (its segment, its
 * place there), and how many entries, from the newest, it walked through to reach it.
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

/** What a walk found, and, when it stopped at its budget first, where to go on from. */
export interface Walked {
  found: Array<{ entry: LoggedRequest; position: LogPosition }>;
  /** The last entry walked: the walk read WALK_BYTES of text before it found `take`. */
  stoppedAt?: LogPosition;
}

/**
 * The most bytes of segment text a walk reads, tested in the store or parsed here, whatever the
 * account's entries hold; about 10,000 usual entries. A walk that meets more before it finds a
 * page's worth stops, and its page says where to go on (decision 0065).
 */
export const WALK_BYTES = 1024 * 1024;
/** Segments read at a time, at first; more once they prove small. */
const SEGMENTS_A_READ = 4;
const MOST_SEGMENTS_A_READ = 256;

/**
 * The account's entries that match, newest first (the last written first, and within a
 * segment the last answered), each with its position, among the newest `visible` entries at
 * most, reading WALK_BYTES of text at most: a read's work is bounded by what is shown, however
 * many entries the account holds until housekeeping prunes them, and whatever they hold.
 */
export async function walkLog(db: ReadDb, accountId: string, walk: LogWalk): Promise<Walked> {
  const found: Walked['found'] = [];
  let walked = walk.after?.walked ?? 0;
  let atOrBefore = walk.after?.seq;
  let bytes = 0;
  let take = SEGMENTS_A_READ;
  let largest = 1;
  for (;;) {
    const segments = await readSegments(db, accountId, {
      ...walk.segments,
      since: new Date(walk.since).toISOString(),
      atOrBefore,
      take,
    });
    for (const segment of segments) {
      // Entries [0, end) of this segment are still to walk.
      const end = segment.seq === walk.after?.seq ? walk.after.index : segment.size;
      if (bytes > 0 && bytes + segment.bytes > WALK_BYTES && end > 0) {
        // Past the budget: the next read goes on with this segment's entries [0, end).
        return { found, stoppedAt: { seq: segment.seq, index: end, walked } };
      }
      bytes += segment.bytes;
      largest = Math.max(largest, segment.bytes);
      if (segment.entries === null) {
        walked += end;
        if (walked >= walk.visible) return { found };
        continue;
      }
      const entries = segmentEntries(segment.entries, segment.firstAt);
      for (let index = end - 1; index >= 0; index--) {
        if (walked >= walk.visible) return { found };
        walked++;
        const entry = entries[index];
        if (entry === undefined || entry.at < walk.since || !walk.matches(entry)) continue;
        found.push({ entry, position: { seq: segment.seq, index, walked } });
        if (found.length === walk.take) return { found };
      }
    }
    const last = segments.at(-1);
    if (segments.length < take || last === undefined) return { found };
    atOrBefore = last.seq - 1;
    // As many as the budget left would hold, were they as large as the largest yet.
    take = Math.min(
      MOST_SEGMENTS_A_READ,
      Math.max(SEGMENTS_A_READ, Math.floor((WALK_BYTES - bytes) / largest)),
    );
  }
}

/**
 * The account's newest entry with this request id, with its bodies, among its newest `visible`
 * entries of those since `since`; undefined without one. The id is searched by the store in
 * one part of the segments' ids (`ids`: a sixteenth of them, a few bytes an entry); only the one
 * segment that holds it is read, its entries parsed, and its bodies' one line.
 */
export async function findEntry(
  db: ReadDb,
  accountId: string,
  find: { id: string; since: number; visible: number },
): Promise<LoggedRequest | undefined> {
  const since = new Date(find.since).toISOString();
  const segment = await segmentHolding(db, accountId, since, find.id);
  if (segment === undefined) return undefined;
  const newer = await entriesAfter(db, accountId, since, segment.seq);
  const entries = segmentEntries(segment.entries, segment.firstAt);
  for (let index = entries.length - 1; index >= 0; index--) {
    const entry = entries[index];
    if (entry?.id !== find.id) continue;
    const walked = newer + (entries.length - index);
    if (walked > find.visible || entry.at < find.since) return undefined;
    const line = await bodiesLine(db, segment.seq, index);
    if (line !== null) withBodies(entries, JSON.parse(line) as unknown[]);
    return entry;
  }
  return undefined;
}
