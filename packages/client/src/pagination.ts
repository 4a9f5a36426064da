/**
 * Lists come a page at a time: the body is a bare array and the next page is announced in
 * `Link: <…>; rel="next"` (RFC 8288). A `PageList` follows those links as given (cursors are
 * opaque) through every page, lazily: nothing is sent until it is iterated.
 */

export interface Page<T> {
  readonly items: T[];
  /** The next page's URL, absent on the last page. */
  readonly next: string | undefined;
}

export class PageList<T> implements AsyncIterable<T> {
  constructor(
    private readonly fetchFirst: () => Promise<Page<T>>,
    private readonly fetchNext: (url: string) => Promise<Page<T>>,
  ) {}

  /** The first page alone. */
  firstPage(): Promise<Page<T>> {
    return this.fetchFirst();
  }

  /** Every page, in order, each fetched when the previous one has been taken. */
  async *pages(): AsyncGenerator<Page<T>, void, undefined> {
    let page = await this.fetchFirst();
    yield page;
    while (page.next !== undefined) {
      page = await this.fetchNext(page.next);
      yield page;
    }
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
