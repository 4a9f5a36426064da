import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { after, afterEach, before, describe, it } from 'node:test';
import { planAccount } from '../../../test/helpers.js';
import { AnimalStoreError, createClient, type Fetch } from '../src/index.js';
import { type Live, live } from './live.js';

/** The package as built (npm run test:client builds it first). */
const BUILT = new URL('../dist/esm/index.js', import.meta.url).href;

/**
 * The service runs on a clock of its own that the test sets to a few seconds before a minute
 * ends, so that waiting for the next minute window takes seconds, not a minute. Held, it stays
 * there however long the machine takes, until `letGo`; then it runs on from where it stood.
 */
let offset = 0;
let heldAt: number | undefined;
const clock = { now: () => new Date(heldAt ?? Date.now() + offset) };
function holdBeforeMinuteEnds(seconds: number): void {
  const now = clock.now().getTime();
  heldAt = now + ((60_000 - (now % 60_000) - seconds * 1000 + 60_000) % 60_000);
}
function letGo(): void {
  if (heldAt === undefined) return;
  offset = heldAt - Date.now();
  heldAt = undefined;
}
function secondsBeforeMinuteEnds(seconds: number): void {
  holdBeforeMinuteEnds(seconds);
  letGo();
}

/** A fetch that notes each answer's status and code, and calls `refused` on a 429. */
function recorder(refused = () => {}): {
  fetch: Fetch;
  answers: Array<{ status: number; code?: string }>;
} {
  const answers: Array<{ status: number; code?: string }> = [];
  return {
    answers,
    fetch: async (request) => {
      const response = await fetch(request);
      const code =
        response.status >= 400
          ? ((await response.clone().json()) as { code?: string }).code
          : undefined;
      answers.push({ status: response.status, ...(code && { code }) });
      if (response.status === 429) refused();
      return response;
    },
  };
}

describe('the SDK and the rate limits of a Free-plan key', () => {
  let server: Live;
  before(async () => {
    server = await live({ clock });
  });
  after(() => server.close());
  // A test that fails while the clock is held must not hold it for the next.
  afterEach(letGo);

  it('drives a Free key past its 60 a minute: every call completes, none refused, no ban', async () => {
    const tenant = await server.tenant('free');
    const { fetch, answers } = recorder();
    const client = createClient({ apiKey: tenant.key, environment: server.origin, fetch });
    const category = await client.categories.create({ name: 'Dogs' });
    secondsBeforeMinuteEnds(6);
    // 100 calls at once, more than a minute allows.
    const calls = await Promise.all([
      ...Array.from({ length: 40 }, (_, i) =>
        client.pets.create({ name: `Pet ${i}`, categoryId: category.id }),
      ),
      ...Array.from({ length: 30 }, () => client.store.inventory()),
      ...Array.from({ length: 30 }, () => client.pets.list().firstPage()),
    ]);
    assert.equal(calls.length, 100);
    assert.deepEqual(
      answers.filter((a) => a.status >= 400),
      [],
      'the client alone on its key is never refused',
    );
    assert.equal(answers.length, 101, 'one request per call');
    assert.equal(client.rateLimit?.limit, 60);
    assert.equal((await client.store.inventory()).available, 40);
    const account = await client.accounts.get();
    assert.equal(account.plan, 'free');
  });

  it('a second client that did not know stops at its first 429 and waits: no ban', async () => {
    const tenant = await server.tenant('free');
    const first = createClient({ apiKey: tenant.key, environment: server.origin });
    // The clock stands still while the first client uses up the minute, so the window cannot
    // end before the second client's first request, however slow the machine; it runs on from
    // that request's refusal, whose Retry-After the second client then waits.
    holdBeforeMinuteEnds(6);
    await first.store.inventory();
    const left = first.rateLimit?.remaining ?? 0;
    await Promise.all(Array.from({ length: left }, () => first.store.inventory()));
    assert.equal(first.rateLimit?.remaining, 0);
    const { fetch, answers } = recorder(letGo);
    const second = createClient({ apiKey: tenant.key, environment: server.origin, fetch });
    const calls = await Promise.all(Array.from({ length: 30 }, () => second.store.inventory()));
    assert.equal(calls.length, 30);
    assert.deepEqual(
      answers.filter((a) => a.status >= 400),
      [{ status: 429, code: 'rate_limited' }],
      'one refusal, then it waited for the Retry-After',
    );
    assert.equal(answers.length, 31);
    await first.store.inventory();
  });

  it('two clients in two processes on one Free key, 45 calls each at once: all complete, no ban', async () => {
    const tenant = await server.tenant('free');
    secondsBeforeMinuteEnds(8);
    // The other process: the built package, its answers' codes printed as JSON at the end.
    const script = `
      import { createClient } from ${JSON.stringify(BUILT)};
      const [origin, apiKey] = process.argv.slice(1);
      const codes = [];
      const fetch = async (request) => {
        const response = await globalThis.fetch(request);
        if (response.status >= 400) codes.push((await response.clone().json()).code);
        return response;
      };
      const client = createClient({ apiKey, baseUrl: origin, fetch });
      // Both processes start their calls together: on the parent's word.
      process.stderr.write('ready\\n');
      await new Promise((resolve) => process.stdin.once('data', resolve));
      const done = await Promise.allSettled(Array.from({ length: 45 }, () => client.store.inventory()));
      process.stdout.write(JSON.stringify({ ok: done.filter((d) => d.status === 'fulfilled').length, codes }));`;
    const child = spawn(
      process.execPath,
      ['--input-type=module', '-e', script, server.origin, tenant.key],
      { stdio: ['pipe', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
    });
    const exited = once(child, 'exit');
    await once(child.stderr, 'data');
    const { fetch, answers } = recorder();
    const here = createClient({ apiKey: tenant.key, baseUrl: server.origin, fetch });
    child.stdin.end('go\n');
    const mine = await Promise.allSettled(Array.from({ length: 45 }, () => here.store.inventory()));
    await exited;
    const theirs = JSON.parse(out) as { ok: number; codes: string[] };
    assert.equal(mine.filter((d) => d.status === 'fulfilled').length, 45);
    assert.equal(theirs.ok, 45, out);
    const codes = [...answers.map((a) => a.code).filter(Boolean), ...theirs.codes];
    assert.ok(!codes.includes('key_banned'), `codes: ${codes.join(', ')}`);
    // The key was limited on the way (90 calls, 60 a minute), and is not banned after.
    assert.ok(codes.includes('rate_limited') || answers.length + theirs.ok > 60);
    await here.store.inventory();
  });

  it('fails a call at once, unsent, when the wait would be longer than maxWaitMs', async () => {
    const tenant = await server.tenant();
    await planAccount(server.t.app, tenant.accountId, 'enterprise', { perMinute: 3, perDay: 100 });
    secondsBeforeMinuteEnds(30);
    let sent = 0;
    const client = createClient({
      apiKey: tenant.key,
      environment: server.origin,
      maxWaitMs: 1_000,
      fetch: (request) => {
        sent++;
        return fetch(request);
      },
    });
    let done = 0;
    let refused: unknown;
    while (!refused) {
      try {
        await client.store.inventory();
        done++;
      } catch (error) {
        refused = error;
      }
    }
    assert.ok(refused instanceof AnimalStoreError);
    assert.deepEqual([refused.status, refused.code], [429, 'rate_limited']);
    assert.ok((refused.retryAfter ?? 0) > 1, 'how long the key is limited');
    assert.ok(done <= 3);
    assert.equal(sent, done, 'the refused call was never sent');
  });
});
