/**
 * `npm run generate -w @animal-store/client`: writes src/schema.ts and src/error-codes.ts from
 * the served document.
 */
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import {
  ERROR_CODES_FILE,
  errorCodesSource,
  SCHEMA_FILE,
  schemaSource,
  servedDocument,
} from './schema-source.js';

const document = await servedDocument();
await writeFile(SCHEMA_FILE, await schemaSource(document));
await writeFile(ERROR_CODES_FILE, errorCodesSource(document));
console.log(`wrote ${fileURLToPath(SCHEMA_FILE)} and ${fileURLToPath(ERROR_CODES_FILE)}`);
