// A second reference: Fastify alone, answering the same 20 pets through schema serialisation
// (no auth, no database, no hooks). The gap from it to the service is ours; from the node:http
// ceiling to it, the framework's. Usage: node bench/framework.mjs <body file>.
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';

const pets = JSON.parse(readFileSync(process.argv[2] ?? '', 'utf8'));
const Pet = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    name: { type: 'string' },
    categoryId: { type: 'integer' },
    status: { type: 'string' },
    createdAt: { type: 'string' },
    updatedAt: { type: 'string' },
  },
};
const app = Fastify({ logger: false });
app.get('/', { schema: { response: { 200: { type: 'array', items: Pet } } } }, async () => pets);
const address = await app.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(`listening ${new URL(address).port}\n`);
process.on('SIGTERM', () => app.close().then(() => process.exit(0)));
