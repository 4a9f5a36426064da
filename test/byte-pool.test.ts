import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BytePool } from '../src/byte-pool.js';

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
    // Another size is another buffer.
    assert.notEqual(pool.take(10).buffer, small.buffer);
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
