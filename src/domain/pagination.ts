import { fail, ok, type Result } from './result.js';

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

export interface PageRequest {
  /** 1 to MAX_PAGE_SIZE; the HTTP schema fills in DEFAULT_PAGE_SIZE when it is left out. */
  limit?: number | undefined;
  /** Opaque cursor from a previous page's `next` link. */
  cursor?: string | undefined;
}

export interface Page<T> {
  items: T[];
  /** Cursor of the page after this one, or null when this is the last page. */
  nextCursor: string | null;
}

const INVALID_CURSOR = 'The cursor is not valid; use the URL from the Link header.';

/**
 * A keyset cursor of one kind: the last key of the page after a version tag (`k1.42`,
 * `e1.evt_…`), base64url-wrapped so clients treat it as opaque. A deep page costs the same as
 * the first (`WHERE id > ? ORDER BY id LIMIT n`).
 */
export class KeysetCursor {
  private readonly shape: RegExp;
  /** The longest wrapped cursor a key of this shape makes, and so the longest accepted. */
  private readonly maxLength: number;

  /** @param key The shape of a key, e.g. `[1-9][0-9]{0,15}`; `keyLength` its most characters. */
  constructor(
    private readonly tag: string,
    key: string,
    keyLength: number,
  ) {
    this.shape = new RegExp(`^${tag}\\.(${key})$`);
    this.maxLength = Math.ceil(((tag.length + 1 + keyLength) * 4) / 3);
  }

  encode(lastKey: string | number): string {
    return Buffer.from(`${this.tag}.${lastKey}`).toString('base64url');
  }

  /** The key a cursor carries; undefined without a cursor (the first page). */
  decode(cursor: string | undefined): Result<string | undefined, 'invalid_cursor'> {
    if (cursor === undefined) return ok(undefined);
    const match =
      cursor.length <= this.maxLength && /^[A-Za-z0-9_-]+$/.test(cursor)
        ? this.shape.exec(Buffer.from(cursor, 'base64url').toString('latin1'))
        : null;
    return match?.[1] === undefined ? fail('invalid_cursor', INVALID_CURSOR) : ok(match[1]);
  }

  /** The first `limit` of `rows` (read `limit + 1`: the extra one only says another page
   * exists), as items, with the cursor after the last. */
  page<R, T>(
    rows: readonly R[],
    limit: number,
    keyOf: (row: R) => string | number,
    toItem: (row: R) => T,
  ): Page<T> {
    const items = rows.slice(0, limit);
    const last = items.at(-1);
    return {
      items: items.map(toItem),
      nextCursor: rows.length > limit && last !== undefined ? this.encode(keyOf(last)) : null,
    };
  }
}

/** The catalogue's and the store's cursors: the last numeric id. */
const ID_CURSOR = new KeysetCursor('k1', '[1-9][0-9]{0,15}', 16);

export function encodeCursor(lastId: number): string {
  return ID_CURSOR.encode(lastId);
}

function decodeCursor(cursor: string | undefined): Result<number, 'invalid_cursor'> {
  const decoded = ID_CURSOR.decode(cursor);
  if (!decoded.ok) return decoded;
  const id = decoded.value === undefined ? 0 : Number(decoded.value);
  return Number.isSafeInteger(id) ? ok(id) : fail('invalid_cursor', INVALID_CURSOR);
}

/** Rows come in `limit + 1` at a time: the extra row only says whether another page exists. */
export function pageSize(page: PageRequest): number {
  return page.limit ?? DEFAULT_PAGE_SIZE;
}

/**
 * A page of numbered rows (the catalogue's, the store's), after the id the request's cursor
 * carries: `read` reads `take` rows after `afterId`, in id order; `toItem` makes each an item.
 */
export async function readIdPage<R extends { id: number }, T>(
  page: PageRequest,
  read: (afterId: number, take: number) => Promise<R[]>,
  toItem: (row: R) => T,
): Promise<Result<Page<T>, 'invalid_cursor'>> {
  const after = decodeCursor(page.cursor);
  if (!after.ok) return after;
  const limit = pageSize(page);
  return ok(ID_CURSOR.page(await read(after.value, limit + 1), limit, (row) => row.id, toItem));
}
