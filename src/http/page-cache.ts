/** Pages kept at most; past it the cache starts again. A page is about 1-2 KB of JSON. */
const PAGES = 2_000;

export interface AnsweredPage {
  /** The page's items, serialized by the route's response schema. */
  body: string;
  /** The `Link` header announcing the next page, if there is one. */
  link: string | undefined;
}

/**
 * List pages as answered (serialized body and `Link`), by account and URL: the embedded mode's
 * list path skips the query, the row mapping and the serialization. An entry stands only while
 * the database is exactly as it was when the page was read (`Database.generation`: any write in
 * this process ends every entry at once, a commit by another process within 10 ms), so a page
 * is never staler than a read would be. Where the store has no generation (PostgreSQL, which
 * other instances write unseen), nothing is kept.
 */
export class PageCache {
  private readonly pages = new Map<string, AnsweredPage & { generation: number }>();

  constructor(private readonly generation: () => number | undefined) {}

  /** The page under `key` as it stands, or `answer()`'s, kept for the next caller. */
  async through(key: string, answer: () => Promise<AnsweredPage>): Promise<AnsweredPage> {
    // Taken before the read: a write during it makes the entry stale, never the reverse.
    const generation = this.generation();
    if (generation === undefined) return answer();
    const kept = this.pages.get(key);
    if (kept?.generation === generation) return kept;
    const page = await answer();
    if (this.pages.size >= PAGES) this.pages.clear();
    this.pages.set(key, { ...page, generation });
    return page;
  }
}
