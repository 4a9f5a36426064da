import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import {
  ERROR_CODES_FILE,
  errorCodesSource,
  SCOPES_FILE,
  scopesSource,
  servedDocument,
} from '../scripts/schema-source.js';

// src/schema.ts is checked by the root suite (test/client-schema.test.ts).
describe("the SDK's generated error codes", () => {
  it('are the served document’s table (npm run generate -w @animal-store/client)', async () => {
    assert.equal(
      readFileSync(ERROR_CODES_FILE, 'utf8'),
      errorCodesSource(await servedDocument()),
      'src/error-codes.ts differs from the served document: run the generate script',
    );
  });

  it('name each operation’s scope as the served document does', async () => {
    assert.equal(
      readFileSync(SCOPES_FILE, 'utf8'),
      scopesSource(await servedDocument()),
      'src/scopes.ts differs from the served document: run the generate script',
    );
  });
});
