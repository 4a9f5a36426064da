// The ceiling: raw node:http answering the exact bytes of a 20-pet page, nothing else.
// Usage: node bench/ceiling.mjs <body file> (prints the port it listens on).
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

const body = readFileSync(process.argv[2] ?? '');
const headers = {
  'content-type': 'application/json; charset=utf-8',
  'content-length': body.length,
};
const server = createServer((_request, response) => {
  response.writeHead(200, headers);
  response.end(body);
});
server.keepAliveTimeout = 72_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening ${server.address().port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
