/**
 * `npm test`: every `*.test.ts` file of this folder, in one process. Run apart, each file paid
 * ~2.5 s of module loading (tsx's hooks over a thousand modules) before its first test;
 * together they pay it once. One file alone: `npx tsx --test test/<name>.test.ts`.
 */
import { readdirSync } from 'node:fs';

const here = new URL('./', import.meta.url);
for (const file of readdirSync(here)
  .filter((name) => name.endsWith('.test.ts'))
  .sort()) {
  await import(new URL(file, here).href);
}
