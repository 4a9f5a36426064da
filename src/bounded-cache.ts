export interface CacheBounds<K, V> {
  /** Entries kept at most. */
  maxEntries: number;
  /** With `sizeOf`: the sum of the entries' sizes kept at most. */
  maxSize?: number;
  sizeOf?: (key: K, value: V) => number;
  /** Told of every entry let go to make room (not of those replaced or deleted). */
  onEvict?: (key: K, value: V) => void;
}

/** What /metrics shows of a cache. */
export interface CacheStats {
  readonly name: string;
  readonly hits: number;
  readonly misses: number;
  readonly evictions: number;
  readonly entries: number;
}

/**
 * The one cache type: a map that holds at most `maxEntries` entries (and `maxSize` of their
 * size): past either, the entries set longest ago go first. It counts hits and misses, which
 * /metrics shows by the cache's name. A value is kept as it was set; callers never change one
 * in place (a changed value is a new entry).
 */
export class BoundedCache<K, V> implements CacheStats {
  private readonly kept = new Map<K, { value: V; size: number }>();
  private size = 0;
  hits = 0;
  misses = 0;
  evictions = 0;

  constructor(
    readonly name: string,
    private readonly bounds: CacheBounds<K, V>,
  ) {}

  get entries(): number {
    return this.kept.size;
  }

  /** The value under `key` if there is one and `usable` (when given) accepts it: a hit;
   * otherwise a miss. */
  get(key: K, usable?: (value: V) => boolean): V | undefined {
    const entry = this.kept.get(key);
    if (entry !== undefined && (usable === undefined || usable(entry.value))) {
      this.hits++;
      return entry.value;
    }
    this.misses++;
    return undefined;
  }

  /** Keeps `value` under `key`, replacing what was there, and makes room for it. */
  set(key: K, value: V): void {
    const size = this.bounds.sizeOf?.(key, value) ?? 0;
    this.delete(key);
    const maxSize = this.bounds.maxSize ?? Number.POSITIVE_INFINITY;
    for (const [oldest, entry] of this.kept) {
      if (this.kept.size < this.bounds.maxEntries && this.size + size <= maxSize) break;
      this.kept.delete(oldest);
      this.size -= entry.size;
      this.evictions++;
      this.bounds.onEvict?.(oldest, entry.value);
    }
    this.kept.set(key, { value, size });
    this.size += size;
  }

  delete(key: K): void {
    const entry = this.kept.get(key);
    if (entry === undefined) return;
    this.kept.delete(key);
    this.size -= entry.size;
  }
}
