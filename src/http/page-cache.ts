import { BoundedCache } from '../bounded-cache.js';

/** Pages kept at most, and their bytes at most (a 20-pet page is ~1.2 K, a 100-pet one ~6 K):
 * past either, the pages kept longest ago go first. */
const PAGES = 2_000;
const BYTES = 4_000_000;

/** Names the state of the data a page was read from: equal versions, equal data. */
export type Version = number | string;

/**
 * The versions of an account's data a read is made under (see `Freshness`). A page with a next
 * page is the first `limit` rows after its cursor; rows added with ids above every id there is
 * (an append) land after it and leave it as it was. So it depends only on `fullPages`, which
 * appends do not move; any other page (the last one) depends on `whole`.
 */
export interface DataVersions {
  /** Moves on with every write to the account's catalogue. */
  readonly whole: Version;
  /** Moves on with every write to it but an append. */
  readonly fullPages: Version;
}

/** Read-only: a kept page is sent to every request for it (its bytes are never written to). */
export interface AnsweredPage {
  /** The page's items, serialized by the route's response schema (bytes: sent as they are). */
  readonly body: Buffer;
  /** The `Link` header announcing the next page, if there is one. */
  readonly link: string | undefined;
}

/** The version of the data a page depends on: see `DataVersions`. */
export function versionFor(page: AnsweredPage, versions: DataVersions): Version {
  return page.link === undefined ? versions.whole : versions.fullPages;
}

/**
 * List pages as answered (serialized body and `Link`), by account and URL, each with the
 * version of the account's data it depends on: the list path skips the query, the row
 * mapping and the serialization while that version stands. Who supplies versions, and why a
 * page is never staler than a read, is `Freshness`'s business (src/http/freshness.ts).
 */
export class PageCache {
  readonly cache = new BoundedCache<string, { version: Version; page: AnsweredPage; atMs: number }>(
    'pages',
    {
      maxEntries: PAGES,
      maxSize: BYTES,
      sizeOf: (key, { page }) => key.length + page.body.length + (page.link?.length ?? 0),
    },
  );

  /**
   * @param maxAgeMs Pages are read again after this long, whatever their version says.
   * @param monotonicMs Milliseconds on a clock that only goes forward.
   */
  constructor(
    private readonly maxAgeMs = Number.POSITIVE_INFINITY,
    private readonly monotonicMs = () => performance.now(),
  ) {}

  /** The page under `key` if it was read under the versions it depends on. */
  get(key: string, versions: DataVersions): AnsweredPage | undefined {
    return this.cache.get(
      key,
      (kept) =>
        kept.version === versionFor(kept.page, versions) &&
        (this.maxAgeMs === Number.POSITIVE_INFINITY ||
          this.monotonicMs() - kept.atMs < this.maxAgeMs),
    )?.page;
  }

  /** Keeps `page`, read under `versions`. */
  keep(key: string, versions: DataVersions, page: AnsweredPage): void {
    this.cache.set(
      key,
      Object.freeze({
        version: versionFor(page, versions),
        page: Object.freeze(page),
        atMs: this.monotonicMs(),
      }),
    );
  }
}
