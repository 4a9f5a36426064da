/** `npm run generate -w @animal-store/client`: writes src/schema.ts from the served document. */
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { SCHEMA_FILE, schemaSource, servedDocument } from './schema-source.js';

await writeFile(SCHEMA_FILE, await schemaSource(await servedDocument()));
console.log(`wrote ${fileURLToPath(SCHEMA_FILE)}`);
