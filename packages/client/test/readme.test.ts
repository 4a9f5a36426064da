import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { codeBlocks, typeCheckBlocks, typeCheckFiles } from './doc-blocks.js';

const README = fileURLToPath(new URL('../README.md', import.meta.url));
const root = fileURLToPath(new URL('../../../', import.meta.url));

describe("the SDK README's code", () => {
  it('type-checks, every ts and js block, against the built package', () => {
    assert.ok(
      existsSync(new URL('../dist/esm/index.d.ts', import.meta.url)),
      'the SDK is built (npm run build -w @animal-store/client; npm run test:client does it)',
    );
    const blocks = codeBlocks(readFileSync(README, 'utf8'));
    assert.ok(blocks.length >= 6, `the README's blocks (${blocks.length})`);
    assert.ok(blocks.some((block) => block.lang === 'js'));
    assert.deepEqual(typeCheckBlocks(README, blocks), []);
  });

  it('would catch what users met: strict, exactOptionalPropertyTypes, Node header types', () => {
    const wrong = [
      // process.env.X may be undefined.
      'const key: string = process.env.ANIMAL_STORE_KEY;\nexport { key };',
      // Under exactOptionalPropertyTypes an optional field does not take undefined.
      'const options: { url?: string } = { url: process.env.URL };\nexport { options };',
      // A header may come as several values.
      "import type { IncomingMessage } from 'node:http';\nexport const f = (req: IncomingMessage): string => req.headers['animal-store-signature'];",
      // A resource's argument, checked against the package's types.
      "import { createClient } from '@animal-store/client';\nawait createClient().pets.create({ name: 'Rex' });",
      "const { createClient } = require('@animal-store/client');\ncreateClient({ maxRetries: 'three' });",
    ];
    const problems = typeCheckBlocks(
      README,
      wrong.map((code, i) => ({ lang: code.includes('require(') ? 'js' : 'ts', line: i, code })),
    );
    assert.equal(problems.length, wrong.length, problems.join('\n'));
  });
});

describe("the repository's other SDK code, checked the same way", () => {
  it('examples/: every script type-checks', () => {
    const examples = join(root, 'examples');
    const scripts = readdirSync(examples)
      .filter((name) => /\.(m?js|cjs|m?ts|cts)$/.test(name))
      .map((name) => join(examples, name));
    assert.ok(scripts.length > 0);
    assert.deepEqual(typeCheckFiles(scripts), []);
  });

  it("the service README's ts and js blocks type-check", () => {
    assert.deepEqual(typeCheckBlocks(join(root, 'README.md')), []);
  });
});
