/**
 * `npm run test:client`: every `*.test.ts` file of this folder in one process, which pays
 * tsx's module loading once (as the root `test/all.ts` does). One file alone:
 * `npx tsx --test packages/client/test/<name>.test.ts` (build the package first for examples
 * and the browser).
 */
import { readdirSync } from 'node:fs';

const here = new URL('./', import.meta.url);
for (const file of readdirSync(here)
  .filter((name) => name.endsWith('.test.ts'))
  .sort()) {
  await import(new URL(file, here).href);
}
