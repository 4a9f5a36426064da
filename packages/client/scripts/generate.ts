/**
 * `npm run generate -w @animal-store/client`: writes src/schema.ts, src/error-codes.ts and
 * src/scopes.ts from
 * the served document.
 */
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import {
  ERROR_CODES_FILE,
  errorCodesSource,
  SCHEMA_FILE,
  SCOPES_FILE,
  schemaSource,
  scopesSource,
  servedDocument,
} from './schema-source.js';

const document = await servedDocument();
await writeFile(SCHEMA_FILE, await schemaSource(document));
await writeFile(ERROR_CODES_FILE, errorCodesSource(document));
await writeFile(SCOPES_FILE, scopesSource(document));
console.log(`wrote ${fileURLToPath(SCHEMA_FILE)} and ${fileURLToPath(ERROR_CODES_FILE)}`);
