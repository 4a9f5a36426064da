import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { storeAccountKey, testDatabaseUrl } from '../helpers.js';
import { kill, type Server, startServer } from './server-process.js';

/** Keyed POSTs sent before the kill, at most. */
const MAX_POSTS = 2000;

describe('Idempotency-Key across a crash (SIGKILL in the middle of keyed POSTs)', () => {
  const { url, cleanup } = testDatabaseUrl();
  const servers: Server[] = [];
  after(async () => {
    for (const server of servers) await kill(server, 'SIGKILL');
    cleanup();
  });

  it('keeps a change and its answer together: every retry after the restart makes one pet per key', async () => {
    const { secret } = await storeAccountKey(url);
    const env: Record<string, string> = { DATABASE_URL: url, WORKER: 'off' };
    if (process.env.TEST_REDIS_URL) {
      env.REDIS_URL = process.env.TEST_REDIS_URL;
      env.REDIS_KEY_PREFIX = `test-${randomUUID()}:`;
    }
    const headers = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
    const first = await startServer(env);
    servers.push(first);
    const category = await fetch(`${first.base}/v1/categories`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ name: 'Crash' }),
    });
    const categoryId = ((await category.json()) as { id: number }).id;
    const run = randomUUID().slice(0, 8);
    const post = (base: string, i: number) =>
      fetch(`${base}/v1/pets`, {
        method: 'POST',
        headers: { ...headers, 'idempotency-key': `${run}-${i}` },
        body: JSON.stringify({ name: `crash-${i}`, categoryId }),
      });

    // 50 at a time, each sender sending its next as soon as its last is answered; the process
    // is killed once 20 answers are in, with about 50 in flight: some of those committed but not
    // answered, some never written. (Sending all at once let a fast machine answer them all
    // before the kill.)
    const acknowledged = new Map<number, string>();
    let sentCount = 0;
    let killing = false;
    const senders = Array.from({ length: 50 }, async () => {
      while (!killing && sentCount < MAX_POSTS) {
        const i = sentCount++;
        try {
          const res = await post(first.base, i);
          if (res.status === 201) acknowledged.set(i, await res.text());
        } catch {
          // Cut off by the kill.
        }
      }
    });
    while (acknowledged.size < 20) await new Promise((r) => setTimeout(r, 1));
    killing = true;
    await kill(first, 'SIGKILL');
    await Promise.all(senders);
    assert.ok(acknowledged.size < sentCount, 'requests were in flight at the kill');

    const second = await startServer(env);
    servers.push(second);
    const retried = new Map<number, { id: number; name: string }>();
    for (let i = 0; i < sentCount; i++) {
      const res = await post(second.base, i);
      assert.equal(res.status, 201, `key ${i}: ${await res.clone().text()}`);
      const body = await res.text();
      const earlier = acknowledged.get(i);
      if (earlier !== undefined) {
        assert.equal(body, earlier, `key ${i}: the acknowledged answer again`);
        assert.equal(res.headers.get('idempotent-replayed'), 'true');
      }
      retried.set(i, JSON.parse(body));
    }

    // One pet per key, each the one its answer names: no change kept without its answer (a
    // retry would have made a second) and no answer without its change.
    const names = new Map<string, number>();
    let next: string | undefined = `${second.base}/v1/pets?limit=100`;
    while (next) {
      const page: Response = await fetch(next, { headers });
      for (const pet of (await page.json()) as Array<{ id: number; name: string }>) {
        names.set(pet.name, (names.get(pet.name) ?? 0) + 1);
        const i = Number(pet.name.slice('crash-'.length));
        assert.equal(retried.get(i)?.id, pet.id, `pet ${pet.name} is the one its answer names`);
      }
      next = /<([^>]+)>;\s*rel="next"/.exec(page.headers.get('link') ?? '')?.[1];
    }
    assert.equal(names.size, sentCount);
    assert.ok([...names.values()].every((n) => n === 1));
  });
});
