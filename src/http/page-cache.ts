/** Pages kept at most, and their characters at most (a 20-pet page is ~1.2 K, a 100-pet one
 * ~6 K): past either, the cache starts again. */
const PAGES = 2_000;
const CHARACTERS = 4_000_000;

export interface AnsweredPage {
  /** The page's items, serialized by the route's response schema. */
  body: string;
  /** The `Link` header announcing the next page, if there is one. */
  link: string | undefined;
}

/**
 * List pages as answered (serialized body and `Link`), by account and URL: the embedded mode's
 * list path skips the query, the row mapping and the serialization. Pages stand only while the
 * database is exactly as it was when they were read (`Database.generation`: any write in this
 * process moves it at once, a commit by another process within 10 ms), and a new generation
 * empties the cache, so a page is never staler than a read would be. Where the store has no
 * generation (PostgreSQL, which other instances write unseen), nothing is kept.
 */
export class PageCache {
  private readonly pages = new Map<string, AnsweredPage>();
  /** The generation every kept page was read under. */
  private readAt: number | undefined;
  private characters = 0;

  constructor(private readonly generation: () => number | undefined) {}

  /** The page under `key` as it stands, or `answer()`'s, kept for the next caller. */
  async through(key: string, answer: () => Promise<AnsweredPage>): Promise<AnsweredPage> {
    const generation = this.generation();
    if (generation === undefined) return answer();
    if (generation !== this.readAt) {
      this.empty();
      this.readAt = generation;
    }
    const kept = this.pages.get(key);
    if (kept) return kept;
    const page = await answer();
    // Kept only if nothing was written while it was read (nor seen by another request since).
    if (this.readAt !== generation || this.generation() !== generation) return page;
    const size = key.length + page.body.length + (page.link?.length ?? 0);
    if (this.pages.size >= PAGES || this.characters + size > CHARACTERS) this.empty();
    this.pages.set(key, page);
    this.characters += size;
    return page;
  }

  private empty(): void {
    this.pages.clear();
    this.characters = 0;
  }
}
