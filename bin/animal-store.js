#!/usr/bin/env node
// The CLI runs from the compiled output; `npm run build` (or `npm start`) makes it.
import { existsSync } from 'node:fs';

const entry = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write('animal-store: run `npm run build` first (or use `npm run cli -- …`).\n');
  process.exit(1);
}
const { run } = await import(entry.href);
const { code, out } = await run(process.argv.slice(2));
(code === 0 ? process.stdout : process.stderr).write(`${out}\n`);
process.exitCode = code;
