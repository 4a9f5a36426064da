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
