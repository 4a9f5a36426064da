import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { type Live, live } from './live.js';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../../', import.meta.url));

describe('examples/, run as written against a fresh server', () => {
  let server: Live;
  before(async () => {
    assert.ok(
      existsSync(new URL('../dist/esm/index.js', import.meta.url)),
      'the SDK is built (npm run build -w @animal-store/client; npm run test:client does it)',
    );
    server = await live();
  });
  after(() => server.close());

  const env = (email: string) => ({
    ...process.env,
    ANIMAL_STORE_URL: server.origin,
    ANIMAL_STORE_EMAIL: email,
  });

  it('quickstart.mjs (the SDK, as built)', async () => {
    const { stdout } = await run('node', ['examples/quickstart.mjs'], {
      cwd: root,
      env: env(`mjs-${Date.now()}@example.com`),
      timeout: 30_000,
    });
    const lines = stdout.trim().split('\n');
    assert.deepEqual(lines.slice(1, 5), [
      'pets 1 2',
      'available 1 Rex',
      'available 2 Bella',
      'rex is sold',
    ]);
    assert.match(lines[0] ?? '', /^key as_test_/);
    assert.equal(lines[5], 'order 1 inventory {"available":0,"pending":0,"sold":1}');
    assert.match(lines[6] ?? '', /^message msg_\w+ sent$/);
    assert.match(lines[7] ?? '', /^error 404 not_found [\w-]+$/);
    assert.match(lines[8] ?? '', /^rate limit \d+ of \d+$/);
  });

  it('quickstart.sh (the same calls with curl)', async () => {
    const { stdout } = await run('sh', ['examples/quickstart.sh'], {
      cwd: root,
      env: env(`sh-${Date.now()}@example.com`),
      timeout: 30_000,
    });
    const json = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    assert.equal(json.length, 10, stdout);
    assert.match(json[0].id, /^acct_/, 'the account');
    assert.deepEqual(
      json.slice(1, 3).map((page: Array<{ id: number }>) => page.map((pet) => pet.id)),
      [[1], [2]],
      'two pages of one pet',
    );
    assert.equal(json[3].status, 'sold');
    assert.deepEqual(json[4], [json[3]], 'the pet read by id');
    assert.deepEqual(
      json.slice(5, 7).map((order: { status: string }) => order.status),
      ['approved', 'delivered'],
    );
    assert.deepEqual(json[7], { available: 0, pending: 0, sold: 1 });
    assert.match(json[8].id, /^msg_/);
    assert.equal(json[8].message, 'Hello, store!');
    assert.deepEqual([json[9].status, json[9].code], [404, 'not_found']);
  });
});
