import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { systemClock } from '../src/clock.js';
import { createDemoAccountIfEmpty } from '../src/demo.js';
import { freshPostgres, startApp, type TestApp } from './helpers.js';

const run = promisify(execFile);

/** The README's walkthrough: every ```sh block after a `<!-- walkthrough` line, in order. */
function walkthrough(): string {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  const blocks = [...readme.matchAll(/<!-- walkthrough[^>]*-->\n```sh\n([\s\S]*?)```/g)].map(
    (m) => m[1] as string,
  );
  assert.ok(blocks.length >= 3, 'the README marks its walkthrough blocks');
  return blocks.join('\n');
}

describe('the README walkthrough, run with sh and curl against a fresh server', () => {
  let t: TestApp;
  let base: string;
  let own: { url: string; drop: () => Promise<void> } | undefined;
  before(async () => {
    // A fresh store: the walkthrough signs up ann@example.com.
    own = process.env.TEST_DATABASE_URL
      ? await freshPostgres(process.env.TEST_DATABASE_URL)
      : undefined;
    t = await startApp({
      env: { APP_ENV: 'development', ...(own && { DATABASE_URL: own.url }) },
    });
    // As on a first `npm start`: the demo account exists, and has used the first ids of its own.
    await createDemoAccountIfEmpty(t.database, systemClock, t.app.ctx.passwords, 'development');
    base = await t.app.listen({ host: '127.0.0.1', port: 0 });
  });
  after(async () => {
    await t.close();
    await own?.drop();
  });

  it('answers every call as the README says', async () => {
    const script = walkthrough();
    assert.match(script, /^BASE=http:\/\/127\.0\.0\.1:8080$/m);
    const dir = mkdtempSync(join(tmpdir(), 'walkthrough-'));
    try {
      // Each curl's answer is kept (headers, body) and its status printed to stderr; the
      // script itself runs as written, but for the address of this test's server.
      // The count lives in a file: a curl inside $(…) runs in a subshell.
      const prelude = `set -eu
echo 0 > "${dir}/count"
curl() {
  n=$(($(cat "${dir}/count") + 1))
  echo $n > "${dir}/count"
  command curl -sS -D "${dir}/$n.headers" -w '%{stderr}%{http_code}\\n' "$@" | tee "${dir}/$n.body"
}
`;
      const { stdout, stderr } = await run(
        'sh',
        ['-c', prelude + script.replace(/^BASE=.*$/m, `BASE=${base}`)],
        { timeout: 30_000 },
      );
      const statuses = stderr.trim().split('\n');
      assert.deepEqual(
        statuses,
        ['201', '201', '201', '201', '201', '200', '200', '204']
          .concat(['201', '200', '200', '200', '200'])
          .concat(['202', '202', '200']),
        stderr,
      );
      const body = (n: number) => JSON.parse(readFileSync(join(dir, `${n}.body`), 'utf8'));
      const headers = (n: number) => readFileSync(join(dir, `${n}.headers`), 'utf8');
      assert.match(stdout, /as_test_\w+\n/, 'the key, echoed');
      assert.equal(body(3).id, 1, "the account's first category");
      assert.deepEqual([body(4).id, body(5).id], [1, 2], 'its first pets');
      assert.match(headers(6), /^link: <.*rel="next"/im, 'a next page');
      assert.equal(body(7).status, 'sold');
      assert.deepEqual([body(9).id, body(9).petId, body(9).status], [1, 2, 'placed']);
      assert.equal(body(11).status, 'delivered');
      assert.deepEqual(
        body(12).map((o: { id: number }) => o.id),
        [1],
      );
      assert.deepEqual(body(13), { available: 0, pending: 0, sold: 1 });
      assert.match(headers(14), new RegExp(`^location: ${base}/messages/msg_\\w+\\r?$`, 'im'));
      assert.equal(body(16).message, 'Hello again');
      assert.deepEqual(body(16).webhooks, { pending: 0, delivered: 0, failed: 0 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
