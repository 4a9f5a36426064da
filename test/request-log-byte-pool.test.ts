import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BytePool } from '../src/request-log/byte-pool.js';

describe('byte pool', () => {
  it('hands out powers of two, 2 KB at least, and the same memory again once given back', () => {
    const pool = new BytePool(1024 * 1024);
    const small = pool.take(10);
    const large = pool.take(5_000);
    assert.equal(small.length, 2_048);
    assert.equal(large.length, 8_192);
    large.write('written before', 0);
    // A view is given back as its buffer.
    pool.give(large.subarray(0, 14));
    assert.equal(pool.bytesFree, 8_192);
    const again = pool.take(4_097);
    assert.equal(again.buffer, large.buffer);
    assert.equal(pool.bytesFree, 0);
    assert.equal(pool.buffersMade, 2);
    // Another size is another buffer.
    pool.give(again);
    assert.notEqual(pool.take(10).buffer, again.buffer);
    assert.equal(pool.bytesFree, 8_192);
    assert.equal(small.length, 2_048);
  });

  it('takes back a buffer once, however often it is given, and none it did not make', () => {
    const pool = new BytePool(1024 * 1024);
    const taken = pool.take(2_048);
    pool.give(taken);
    pool.give(taken.subarray(10));
    assert.equal(pool.bytesFree, 2_048);
    const first = pool.take(2_048);
    const second = pool.take(2_048);
    assert.equal(first.buffer, taken.buffer);
    assert.notEqual(second.buffer, taken.buffer);
    pool.give(Buffer.alloc(2_048));
    pool.give(Buffer.allocUnsafeSlow(4_096));
    assert.equal(pool.bytesFree, 0);
  });

  it('lets go of the size holding the most to take back another: it follows what is asked now', () => {
    const pool = new BytePool(16_384);
    // A burst of large buffers fills it…
    const large = [pool.take(8_192), pool.take(8_192), pool.take(8_192)];
    for (const buffer of large) pool.give(buffer);
    assert.equal(pool.bytesFree, 16_384);
    // …and the small ones given back after it still go in, a large one going out for them.
    const small = [pool.take(2_048), pool.take(2_048)];
    for (const buffer of small) pool.give(buffer);
    assert.equal(pool.bytesFree, 8_192 + 4_096);
    assert.equal(pool.take(2_048).buffer, small[1]?.buffer);
    assert.equal(pool.take(8_192).buffer, large[0]?.buffer);
    // One larger than it keeps is never kept.
    pool.give(pool.take(32_768));
    assert.equal(pool.bytesFree, 2_048);
  });

  it('keeps at most its bytes free; a pool of none keeps nothing', () => {
    const pool = new BytePool(4_096);
    const buffers = [pool.take(2_048), pool.take(2_048), pool.take(2_048)];
    for (const buffer of buffers) pool.give(buffer);
    assert.equal(pool.bytesFree, 4_096);
    const none = new BytePool(0);
    none.give(none.take(1));
    assert.equal(none.bytesFree, 0);
  });
});
