import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import {
  SCHEMA_FILE,
  schemaSource,
  servedDocument,
} from '../packages/client/scripts/schema-source.js';

describe("the SDK's generated types", () => {
  it('are what the served OpenAPI document generates (npm run generate -w @animal-store/client)', async () => {
    const expected = await schemaSource(await servedDocument());
    const actual = readFileSync(SCHEMA_FILE, 'utf8');
    // Not assert.equal on 5,000 lines: the first differing line says what drifted.
    const [want, got] = [expected.split('\n'), actual.split('\n')];
    const line = want.findIndex((text, i) => text !== got[i]);
    assert.ok(
      line === -1 && want.length === got.length,
      `packages/client/src/schema.ts differs from the served document at line ${line + 1}:\n` +
        `  served:     ${want[line] ?? '(end)'}\n  checked in: ${got[line] ?? '(end)'}\n` +
        'Run `npm run generate -w @animal-store/client` and commit the result.',
    );
  });
});
