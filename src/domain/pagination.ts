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

const CURSOR_SHAPE = /^k1\.([1-9][0-9]{0,15})$/;

/**
 * Keyset cursors: the last id of the page, versioned and base64url-wrapped so clients treat it
 * as opaque. A deep page costs the same as the first (`WHERE id > ? ORDER BY id LIMIT n`).
 */
export function encodeCursor(lastId: number): string {
  return Buffer.from(`k1.${lastId}`).toString('base64url');
}

export function decodeCursor(cursor: string | undefined): Result<number, 'invalid_cursor'> {
  if (cursor === undefined) return ok(0);
  const match = /^[A-Za-z0-9_-]{1,32}$/.test(cursor)
    ? CURSOR_SHAPE.exec(Buffer.from(cursor, 'base64url').toString('latin1'))
    : null;
  const id = match ? Number(match[1]) : Number.NaN;
  if (!Number.isSafeInteger(id)) {
    return fail('invalid_cursor', 'The cursor is not valid; use the URL from the Link header.');
  }
  return ok(id);
}

/** Rows come in `limit + 1` at a time: the extra row only says whether another page exists. */
export function pageSize(page: PageRequest): number {
  return page.limit ?? DEFAULT_PAGE_SIZE;
}

export function toPage<T extends { id: number }>(rows: T[], limit: number): Page<T> {
  const items = rows.slice(0, limit);
  const last = items.at(-1);
  return { items, nextCursor: rows.length > limit && last ? encodeCursor(last.id) : null };
}
