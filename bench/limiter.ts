/**
 * What the rate-limit check costs a request: RateLimiter.check on the memory backend (the
 * embedded default), against a bare Map increment as the ceiling, in one run.
 * Usage: npm run bench (or tsx bench/limiter.ts [iterations]).
 */
// The compiled service (npm run build), as production runs it: tsx's transform adds a
// helper call to every closure it creates, which would dominate a microsecond measurement.
const dist = (path: string) => new URL(`../dist/${path}`, import.meta.url).href;
const { systemClock } = (await import(dist('clock.js'))) as typeof import('../src/clock.js');
const { MemoryCounterStore } = (await import(
  dist('limits/memory-store.js')
)) as typeof import('../src/limits/memory-store.js');
const { RateLimiter } = (await import(
  dist('limits/rate-limiter.js')
)) as typeof import('../src/limits/rate-limiter.js');

const iterations = Number(process.argv[2] ?? 300_000);
const subjects = Array.from({ length: 1_000 }, (_, i) => ({ id: `acct_${i}`, banId: `key_${i}` }));
const limits = { perMinute: 1e9, perDay: 1e12 };

async function time(label: string, run: (i: number) => unknown): Promise<number> {
  for (let i = 0; i < 20_000; i++) await run(i); // warm-up
  const start = process.hrtime.bigint();
  for (let i = 0; i < iterations; i++) await run(i);
  const ns = Number(process.hrtime.bigint() - start) / iterations;
  console.log(
    `${label.padEnd(34)} ${(ns / 1000).toFixed(2).padStart(8)} µs/op ${Math.round(1e9 / ns)
      .toLocaleString('en')
      .padStart(12)} ops/s`,
  );
  return ns;
}

const map = new Map<string, number>();
const ceiling = await time('ceiling: Map increment (awaited)', async (i) => {
  const key = subjects[i % subjects.length]?.id ?? '';
  map.set(key, (map.get(key) ?? 0) + 1);
});
const limiter = new RateLimiter(new MemoryCounterStore(), systemClock, {
  banThreshold: 20,
  banSeconds: 900,
});
const check = await time('RateLimiter.check (memory)', (i) =>
  limiter.check(subjects[i % subjects.length] ?? { id: 'x', banId: 'x' }, limits),
);
console.log(`limit check adds ${((check - ceiling) / 1000).toFixed(2)} µs per request`);
await limiter.close();
