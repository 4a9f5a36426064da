/**
 * Lists come a page at a time: the body is a bare array and the next page is announced in
 * `Link: <…>; rel="next"` (RFC 8288). A `PageList` follows those links as given (cursors are
 * opaque) through every page, lazily: nothing is sent until it is iterated.
 */
import type { LastResponse } from './response.js';

export interface Page<T> {
  readonly items: T[];
  /** The next page's URL, absent on the last page. */
  readonly next: string | undefined;
  /** The answer the page came in (not enumerable, as a result's). */
  readonly lastResponse: LastResponse;
}

export class PageList<T> implements AsyncIterable<T> {
  #last: LastResponse | undefined;

  constructor(
    private readonly fetchFirst: () => Promise<Page<T>>,
    private readonly fetchNext: (url: string) => Promise<Page<T>>,
  ) {}

  /**
   * The answer of the page this list read last (undefined before its first): during a
   * `for await`, the current page's; after `toArray()`, the last page's.
   */
  get lastResponse(): LastResponse | undefined {
    return this.#last;
  }

  /** The first page alone. */
  async firstPage(): Promise<Page<T>> {
    return this.#read(await this.fetchFirst());
  }

  /** Every page, in order, each fetched when the previous one has been taken. */
  async *pages(): AsyncGenerator<Page<T>, void, undefined> {
    let page = this.#read(await this.fetchFirst());
    yield page;
    while (page.next !== undefined) {
      page = this.#read(await this.fetchNext(page.next));
      yield page;
    }
  }

  #read(page: Page<T>): Page<T> {
    this.#last = page.lastResponse;
    return page;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<T, void, undefined> {
    for await (const page of this.pages()) yield* page.items;
  }

  /** Every item of every page, in one array. */
  async toArray(): Promise<T[]> {
    const all: T[] = [];
    for await (const item of this) all.push(item);
    return all;
  }
}

/** A link-value of RFC 8288: `<target>` and its parameters, quoted strings read whole. */
const LINK_VALUE =
  /<([^>]*)>((?:\s*;\s*[\w!#$%&'*+.^`|~-]+\s*(?:=\s*(?:"(?:[^"\\]|\\.)*"|[^;,\s]*))?)*)/g;
const REL = /;\s*rel\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;,\s]+))/i;

/** The `rel="next"` target of a Link field, resolved against the answer's URL. */
export function nextLink(link: string | null, base: string): string | undefined {
  if (!link) return undefined;
  for (const match of link.matchAll(LINK_VALUE)) {
    const rel = REL.exec(match[2] ?? '');
    const names = (rel?.[1] ?? rel?.[2] ?? '').toLowerCase().split(/\s+/);
    if (names.includes('next')) return new URL(match[1] ?? '', base).href;
  }
  return undefined;
}
