/** Pages kept at most, and their bytes at most (a 20-pet page is ~1.2 K, a 100-pet one ~6 K):
 * past either, the cache starts again. */
const PAGES = 2_000;
const BYTES = 4_000_000;

/** Names the state of the data a page was read from: equal versions, equal data. */
export type Version = number | string;

export interface AnsweredPage {
  /** The page's items, serialized by the route's response schema (bytes: sent as they are). */
  body: Buffer;
  /** The `Link` header announcing the next page, if there is one. */
  link: string | undefined;
}

/**
 * List pages as answered (serialized body and `Link`), by account and URL, each with the
 * version of the account's data it was read under: the list path skips the query, the row
 * mapping and the serialization while that version stands. Who supplies versions, and why a
 * page is never staler than a read, is `Freshness`'s business (src/http/freshness.ts).
 */
export class PageCache {
  private readonly pages = new Map<
    string,
    { version: Version; page: AnsweredPage; size: number; atMs: number }
  >();
  private bytes = 0;

  /**
   * @param maxAgeMs Pages are read again after this long, whatever their version says.
   * @param monotonicMs Milliseconds on a clock that only goes forward.
   */
  constructor(
    private readonly maxAgeMs = Number.POSITIVE_INFINITY,
    private readonly monotonicMs = () => performance.now(),
  ) {}

  /** The page under `key` if it was read under `version`. */
  get(key: string, version: Version): AnsweredPage | undefined {
    const kept = this.pages.get(key);
    if (kept === undefined || kept.version !== version) return undefined;
    return this.maxAgeMs === Number.POSITIVE_INFINITY ||
      this.monotonicMs() - kept.atMs < this.maxAgeMs
      ? kept.page
      : undefined;
  }

  keep(key: string, version: Version, page: AnsweredPage): void {
    const size = key.length + page.body.length + (page.link?.length ?? 0);
    this.bytes -= this.pages.get(key)?.size ?? 0;
    if (this.pages.size >= PAGES || this.bytes + size > BYTES) this.empty();
    this.pages.set(key, { version, page, size, atMs: this.monotonicMs() });
    this.bytes += size;
  }

  private empty(): void {
    this.pages.clear();
    this.bytes = 0;
  }
}
