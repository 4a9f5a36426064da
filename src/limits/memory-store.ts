import type { Counter, CounterStore, HitInput, HitResult } from './store.js';

interface Entry {
  value: number;
  expiresAt: number;
}

/**
 * Counters in this process: the embedded default. Node runs one callback at a time, so each
 * hit is atomic without locks. Expired entries are swept at most once a second, on use.
 */
export class MemoryCounterStore implements CounterStore {
  readonly kind = 'memory';
  private readonly entries = new Map<string, Entry>();
  private nextSweep = 0;

  hit(input: HitInput, now: number): HitResult {
    this.sweep(now);
    const { counters } = input;
    const counts: number[] = [];
    for (const counter of counters) counts.push(this.read1(counter.key, now));
    const ban = this.entries.get(input.banKey);
    if (ban !== undefined && ban.expiresAt > now) {
      return { outcome: 'banned', counts, banMsLeft: ban.expiresAt - now };
    }
    for (let index = 0; index < counters.length; index++) {
      const counter = counters[index] as Counter;
      if ((counts[index] as number) < counter.limit) continue;
      const since = this.first(input.sinceKeys[index] as string, now, counter.ttlMs);
      if (now - since < input.banGraceMs) return { outcome: 'limited', counts, index };
      const strikes = this.increment(input.strikeKeys[index] as string, now, counter.ttlMs);
      if (strikes > input.banThreshold) {
        this.entries.set(input.banKey, { value: 1, expiresAt: now + input.banMs });
        return { outcome: 'banned', counts, banMsLeft: input.banMs, started: true };
      }
      return { outcome: 'limited', counts, index };
    }
    for (let index = 0; index < counters.length; index++) {
      const counter = counters[index] as Counter;
      counts[index] = this.increment(counter.key, now, counter.ttlMs);
    }
    return { outcome: 'allowed', counts };
  }

  async read(keys: string[], nowMs: number): Promise<number[]> {
    return keys.map((key) => this.read1(key, nowMs));
  }

  async banEnds(banKeys: string[], nowMs: number): Promise<Array<number | undefined>> {
    return banKeys.map((key) => {
      const entry = this.entries.get(key);
      return entry && entry.expiresAt > nowMs ? entry.expiresAt : undefined;
    });
  }

  async ping(): Promise<void> {}

  /** Nothing is shared, so there are no versions to move on. */
  async bump(): Promise<void> {}

  async close(): Promise<void> {
    this.entries.clear();
  }

  private read1(key: string, now: number): number {
    const entry = this.entries.get(key);
    return entry && entry.expiresAt > now ? entry.value : 0;
  }

  /** When `key` was first set in its life: `now` if this sets it. */
  private first(key: string, now: number, ttlMs: number): number {
    const entry = this.entries.get(key);
    if (entry && entry.expiresAt > now) return entry.value;
    this.entries.set(key, { value: now, expiresAt: now + ttlMs });
    return now;
  }

  private increment(key: string, now: number, ttlMs: number): number {
    const entry = this.entries.get(key);
    if (entry && entry.expiresAt > now) return ++entry.value;
    this.entries.set(key, { value: 1, expiresAt: now + ttlMs });
    return 1;
  }

  private sweep(now: number): void {
    if (now < this.nextSweep) return;
    this.nextSweep = now + 1_000;
    for (const [key, entry] of this.entries) if (entry.expiresAt <= now) this.entries.delete(key);
  }
}
