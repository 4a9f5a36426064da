/**
 * `npm run build` (and `prepack`): writes src/version.ts from package.json, then compiles src/
 * twice, to ES modules in dist/esm and to CommonJS in dist/cjs, so that both `import` and
 * `require()` load the package on every Node line it supports (Node 20 cannot `require` ESM).
 * Plain JavaScript: it runs in a fresh checkout with nothing but Node and the dev dependencies.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { versionSource } from './version.mjs';

const here = (path) => fileURLToPath(new URL(`../${path}`, import.meta.url));
const manifest = JSON.parse(readFileSync(here('package.json'), 'utf8'));

const versionFile = here('src/version.ts');
const source = versionSource(manifest.version);
if (!existsSync(versionFile) || readFileSync(versionFile, 'utf8') !== source) {
  writeFileSync(versionFile, source);
}

rmSync(here('dist'), { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
for (const project of ['tsconfig.json', 'tsconfig.cjs.json']) {
  execFileSync(process.execPath, [tsc, '-p', here(project)], { stdio: 'inherit' });
}
// The package is "type": "module"; this marks dist/cjs's .js (and .d.ts) files as CommonJS.
writeFileSync(here('dist/cjs/package.json'), `${JSON.stringify({ type: 'commonjs' })}\n`);
