import { randomFillSync } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

// CSPRNG bytes drawn 4 KiB at a time and used once each, as Node's randomUUID does: one call
// into OpenSSL per hundred ids instead of one per id (every accepted message takes an id).
const pool = Buffer.alloc(4096);
let next = pool.length;

function randomByte(): number {
  if (next === pool.length) {
    randomFillSync(pool);
    next = 0;
  }
  return pool[next++] as number;
}

/** `length` characters of base62 from the CSPRNG, without modulo bias (rejection sampling). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    const byte = randomByte();
    // 248 = 4 * 62: bytes at or above it would favour the first characters.
    if (byte < 248) out += BASE62[byte % 62];
  }
  return out;
}

/**
 * An id's body that sorts, as text, by the millisecond it was made in: seven base62 digits of
 * the time (enough until 2081), then `randomLength` random ones. An index on such ids grows at
 * its end, a few pages per commit, where random ids would dirty a page per insert.
 */
export function timeOrderedBase62(ms: number, randomLength: number): string {
  return base62Digits(ms, 7) + randomBase62(randomLength);
}

/** `value` (a non-negative integer) in `length` base62 digits, most significant first, so
 * that the strings sort as the numbers do (the digits are in ASCII order). */
export function base62Digits(value: number, length: number): string {
  let digits = '';
  for (let rest = Math.floor(value), i = 0; i < length; i++, rest = Math.floor(rest / 62)) {
    digits = BASE62[rest % 62] + digits;
  }
  return digits;
}
