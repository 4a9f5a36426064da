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
  let time = '';
  for (let rest = Math.floor(ms), i = 0; i < 7; i++, rest = Math.floor(rest / 62)) {
    time = BASE62[rest % 62] + time;
  }
  return time + randomBase62(randomLength);
}
