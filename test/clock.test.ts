import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { systemClock, wallTimeOf } from '../src/clock.js';
import { stillClock } from './helpers.js';

describe('wallTimeOf', () => {
  const realNow = Date.now;
  afterEach(() => {
    Date.now = realNow;
    // The own property a test set, if any: `now` is performance's prototype's again.
    delete (performance as { now?: unknown }).now;
  });

  it("reads an instant as the system clock's time then, in whole ms, up to 1 ms behind", () => {
    const wallTime = wallTimeOf(systemClock);
    for (let i = 0; i < 1_000; i++) {
      const before = Date.now();
      const read = wallTime(performance.now());
      const after = Date.now();
      assert.ok(Number.isInteger(read), String(read));
      assert.ok(read >= before - 1 && read <= after, `${before} - 1 ≤ ${read} ≤ ${after}`);
    }
  });

  it('never reads a later instant as an earlier time, across its readings of the clocks', async () => {
    const wallTime = wallTimeOf(systemClock);
    let last = 0;
    const until = performance.now() + 300;
    while (performance.now() < until) {
      const read = wallTime(performance.now());
      assert.ok(read >= last, `${read} after ${last}`);
      last = read;
      // Past the offset's period now and then, so that it is read again.
      if (Math.random() < 0.01) await new Promise((resolve) => setTimeout(resolve, 7));
    }
  });

  it('follows the wall clock forward at once, and back only once it is more than 2 ms back', () => {
    // Both clocks as this test sets them: the wall clock is `wall` ms ahead of the instants.
    let instant = 1_000;
    let wall = 1_700_000_000_000;
    performance.now = () => instant;
    Date.now = () => wall + instant;
    const wallTime = wallTimeOf(systemClock);
    /** How far ahead of the wall clock it reads an instant of 51 ms on (past its period). */
    const ahead = () => {
      instant += 51;
      return wallTime(instant) - (wall + instant);
    };
    assert.equal(ahead(), 0);
    wall += 60_000;
    assert.equal(ahead(), 0, 'a step forward is followed');
    wall -= 2;
    assert.equal(ahead(), 2, 'a move back of 2 ms is not');
    wall -= 1;
    assert.equal(ahead(), 0, 'one of 3 ms is');
    wall -= 10_000;
    assert.equal(ahead(), 0, 'and a step back of 10 s');
    instant += 10;
    wall += 5;
    assert.equal(wallTime(instant), wall - 5 + instant, 'read again only once its period is past');
  });

  it("reads any other clock as it is, whatever the instant (a test's clock moves when told)", () => {
    const clock = stillClock();
    const wallTime = wallTimeOf(clock);
    assert.equal(wallTime(0), clock.now().getTime());
    clock.advance(1_000);
    assert.equal(wallTime(performance.now() - 5_000), clock.now().getTime());
  });
});
