/**
 * Webhook deliveries' slots under endpoints that do not answer (docs/decisions/0001, 0067): the
 * dispatcher's own, timed, on real receivers; apart from npm test (they take seconds of waiting
 * for timeouts), run by npm run test:process.
 */
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Answerer, addEndpoint, BlackHole, deliveries } from '../black-hole.js';
import {
  createCategory,
  createPet,
  FAST,
  newTenant,
  startApp,
  type Tenant,
  type TestApp,
  until,
} from '../helpers.js';

/** A full garbage collection, in this process (as `--expose-gc` gives `global.gc`). */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  gc();
}

/** A black hole and a healthy receiver for one test, closed after it. */
async function receivers(t: TestContext): Promise<{ blackHole: BlackHole; healthy: Answerer }> {
  const blackHole = await new BlackHole().start();
  const healthy = await new Answerer().start();
  t.after(async () => {
    await blackHole.close();
    await healthy.close();
  });
  return { blackHole, healthy };
}

/** Whether every one of the endpoints has failed since its last success. */
async function allFailing(t: TestApp, ids: readonly string[]): Promise<boolean> {
  const rows = await t.database.reader
    .selectFrom('webhook_endpoints')
    .select('id')
    .where('id', 'in', ids)
    .where('failing_since', 'is not', null)
    .execute();
  return rows.length === ids.length;
}

describe('the dispatcher and silent receivers', { concurrency: true }, () => {
  it('ends a POST nobody answers at its timeout, after a garbage collection too', async (c) => {
    const { blackHole } = await receivers(c);
    const t = await startApp({ env: { ...FAST, WEBHOOK_TIMEOUT_SECONDS: '1' }, ownStore: true });
    try {
      const tenant = await newTenant(t.app);
      const id = await addEndpoint(t.app, tenant, `${blackHole.url}/gc`);
      await createPet(t.app, tenant, { categoryId: (await createCategory(t.app, tenant)).id });
      await until(() => blackHole.holding > 0, 'the POST to be held');
      // What only a weakly held timeout signal had kept is collected now.
      collectGarbage();
      collectGarbage();
      await until(
        async () => (await deliveries(t.app, tenant, id))[0]?.lastResponse !== null,
        'the first attempt to end',
        5_000,
      );
      const [delivery] = await deliveries(t.app, tenant, id);
      assert.equal(delivery?.lastResponse, 'No answer within 1 s.');
      assert.equal(delivery?.lastStatusCode, null);
    } finally {
      await t.close();
    }
  });

  it("delays only the silent endpoints' own deliveries, within the caps", async (c) => {
    const { blackHole, healthy } = await receivers(c);
    // The default timeout (10 s) and slots (32: 8 an account, 2 an endpoint).
    const t = await startApp({ env: { WEBHOOK_POLL_MS: '20' }, ownStore: true });
    try {
      const silent = await newTenant(t.app);
      for (let i = 0; i < 8; i++) await addEndpoint(t.app, silent, `${blackHole.url}/silent/${i}`);
      const category = await createCategory(t.app, silent);
      for (let i = 0; i < 4; i++) await createPet(t.app, silent, { categoryId: category.id });
      await until(() => blackHole.holding >= 8, 'the silent account to fill its slots');

      const well = await newTenant(t.app);
      await addEndpoint(t.app, well, `${healthy.url}/well`);
      const wellCategory = await createCategory(t.app, well);
      for (let i = 1; i <= 5; i++) {
        // One more event of the silent account each time: it keeps wanting every slot.
        await createPet(t.app, silent, { categoryId: category.id });
        await createPet(t.app, well, { categoryId: wellCategory.id });
        await until(() => healthy.of('/well').length === i, `the healthy delivery ${i}`);
      }
      // Every healthy delivery arrived while the silent ones were still held: none of them had
      // reached its timeout, so none waited for one.
      assert.equal(blackHole.ended, 0, 'no silent POST ended before the healthy ones arrived');
      for (const [path, most] of blackHole.mostHeld) {
        assert.ok(most <= 2, `${path}: ${most} at once`);
      }
      assert.equal(blackHole.mostHeldInAll, 8, 'a quarter of the 32 slots for the account');
    } finally {
      await t.close();
    }
  });

  it('keeps half the slots for endpoints that answer, however many accounts never do', async (c) => {
    const { blackHole, healthy } = await receivers(c);
    // 8 slots: 2 an account, 4 for the endpoints that do not answer together.
    const t = await startApp({
      env: { ...FAST, WEBHOOK_CONCURRENCY: '8', WEBHOOK_TIMEOUT_SECONDS: '1' },
      ownStore: true,
    });
    try {
      // An endpoint that has answered already.
      const well = await newTenant(t.app);
      await addEndpoint(t.app, well, `${healthy.url}/well`);
      const wellCategory = await createCategory(t.app, well);
      await createPet(t.app, well, { categoryId: wellCategory.id });
      await until(() => healthy.of('/well').length === 1, 'the first healthy delivery');

      // Eight accounts of one silent endpoint each: 16 POSTs they could hold by the other caps,
      // from their first events on (new endpoints, not yet failing).
      const silent: Array<{ tenant: Tenant; category: number }> = [];
      const ids: string[] = [];
      for (let i = 0; i < 8; i++) {
        const tenant = await newTenant(t.app);
        ids.push(await addEndpoint(t.app, tenant, `${blackHole.url}/silent/${i}`));
        silent.push({ tenant, category: (await createCategory(t.app, tenant)).id });
      }
      const more = () =>
        Promise.all(silent.map((s) => createPet(t.app, s.tenant, { categoryId: s.category })));
      await more();
      await more();
      await until(() => blackHole.holding === 4, 'the silent endpoints to fill their half');
      for (let i = 2; i <= 4; i++) {
        await more();
        await createPet(t.app, well, { categoryId: wellCategory.id });
        await until(() => healthy.of('/well').length === i, `the healthy delivery ${i}`);
      }
      // Failing now, and still sent to, within their half.
      await until(() => allFailing(t, ids), 'every silent endpoint to have failed');
      const sent = blackHole.receivedInAll;
      await until(() => blackHole.receivedInAll >= sent + 4, 'the silent endpoints sent to again');
      assert.ok(blackHole.mostHeldInAll <= 4, `${blackHole.mostHeldInAll} held at once`);
    } finally {
      await t.close();
    }
  });
});

// Alone, not beside other tests: its assertion is a delay.
describe('the dispatcher and endpoints that answer once, then go silent', () => {
  it("gets a healthy account's deliveries out within 2 s while 64 endpoints flip to silent", async (c) => {
    const flips = await new BlackHole({ answersFirst: true }).start();
    const healthy = await new Answerer().start();
    c.after(async () => {
      await flips.close();
      await healthy.close();
    });
    // The default slots (32: 8 an account, 2 an endpoint, 16 for endpoints slow to answer); a
    // short timeout, so the test is short, though the healthy deliveries must never wait for it.
    const t = await startApp({ env: { ...FAST, WEBHOOK_TIMEOUT_SECONDS: '4' }, ownStore: true });
    let sampling: NodeJS.Timeout | undefined;
    try {
      const well = await newTenant(t.app);
      await addEndpoint(t.app, well, `${healthy.url}/well`);
      const wellCategory = await createCategory(t.app, well);
      await createPet(t.app, well, { categoryId: wellCategory.id });
      await until(() => healthy.of('/well').length === 1, 'the first healthy delivery');

      // Four accounts of 16 endpoints (the most an account may have): each answers its first
      // delivery at once, and so counts as answering; then none answers again.
      const flippers: Array<{ tenant: Tenant; category: number }> = [];
      for (let i = 0; i < 4; i++) {
        const tenant = await newTenant(t.app);
        for (let e = 0; e < 16; e++) await addEndpoint(t.app, tenant, `${flips.url}/${i}/${e}`);
        flippers.push({ tenant, category: (await createCategory(t.app, tenant)).id });
      }
      const more = () =>
        Promise.all(flippers.map((f) => createPet(t.app, f.tenant, { categoryId: f.category })));
      await more();
      await until(() => flips.answered === 64, 'every flipping endpoint to answer once');

      // Silent from now on, with deliveries due to every one of them all along: for two
      // timeouts, a healthy event every 200 ms, and 64 more deliveries to the silent ones every
      // 400 ms. Meanwhile, how many POSTs are held past the bound (1 s, and a margin).
      let mostHeldLong = 0;
      sampling = setInterval(() => {
        mostHeldLong = Math.max(mostHeldLong, flips.heldLongerThan(1_500));
      }, 50);
      let healthyPets = 1;
      for (let i = 0; i < 40; i++) {
        if (i % 2 === 0) await more();
        await createPet(t.app, well, { categoryId: wellCategory.id });
        healthyPets++;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      await until(
        () => healthy.of('/well').length >= healthyPets,
        'every healthy delivery',
        15_000,
      );
      clearInterval(sampling);

      const delays = healthy
        .of('/well')
        .slice(1)
        .map((r) => r.at - Date.parse((JSON.parse(r.body) as { createdAt: string }).createdAt));
      c.diagnostic(
        `healthy delays (ms): max ${Math.max(...delays)}, ${delays.join(' ')}; flipped: ` +
          `${flips.receivedInAll} POSTs, ${flips.ended} ended, ${mostHeldLong} held past 1.5 s at most`,
      );
      // A delay as an assertion, as the issue sets it: 2 s from the event to its arrival.
      const late = delays.filter((ms) => ms > 2_000);
      assert.equal(
        late.length,
        0,
        `${late.length} of ${delays.length} healthy deliveries arrived over 2 s after their ` +
          `event (ms, in order): ${delays.join(' ')}`,
      );
      assert.ok(
        mostHeldLong <= 16,
        `${mostHeldLong} POSTs held past 1.5 s at once: more than half the 32 slots`,
      );
      assert.ok(flips.receivedInAll > 64 + 32, `${flips.receivedInAll} POSTs to the flipped`);
    } finally {
      clearInterval(sampling);
      await t.close();
    }
  });
});

// Alone, not beside other tests: its assertion is a delay.
describe('the dispatcher and a recovery of 1,000 deliveries', () => {
  it("gets another account's deliveries out within 2 s while 1,000 recovered ones go", async (c) => {
    const slow = await new Answerer().start();
    const healthy = await new Answerer().start();
    // The recovered endpoint takes 50 ms an answer: its 1,000 deliveries take many seconds.
    slow.answer = (res) => {
      setTimeout(() => res.writeHead(200).end('ok'), 50);
    };
    c.after(async () => {
      await slow.close();
      await healthy.close();
    });
    const t = await startApp({ env: { ...FAST }, ownStore: true });
    try {
      const recovering = await newTenant(t.app);
      const since = new Date(Date.now() - 1000).toISOString();
      const category = await createCategory(t.app, recovering);
      for (let i = 0; i < 1000; i += 50) {
        await Promise.all(
          Array.from({ length: 50 }, () =>
            createPet(t.app, recovering, { categoryId: category.id }),
          ),
        );
      }
      // An endpoint made after the events: the recovery sends it every one of them.
      const hook = await addEndpoint(t.app, recovering, `${slow.url}/recovered`);
      const recovered = await t.app.inject({
        method: 'POST',
        url: `/v1/webhooks/${hook}/recover`,
        headers: recovering.headers,
        payload: { since, include: 'all' },
      });
      assert.equal(recovered.statusCode, 202, recovered.body);
      assert.equal(recovered.json().queued, 1000);

      const well = await newTenant(t.app);
      await addEndpoint(t.app, well, `${healthy.url}/well`);
      const wellCategory = await createCategory(t.app, well);
      for (let i = 0; i < 20; i++) {
        await createPet(t.app, well, { categoryId: wellCategory.id });
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      await until(() => healthy.of('/well').length >= 20, 'every healthy delivery', 15_000);
      const delays = healthy
        .of('/well')
        .map((r) => r.at - Date.parse((JSON.parse(r.body) as { createdAt: string }).createdAt));
      const sent = slow.of('/recovered').length;
      c.diagnostic(`healthy delays (ms): max ${Math.max(...delays)}; recovered sent: ${sent}`);
      assert.ok(sent < 1000, 'the recovery was still going while the other account was served');
      const late = delays.filter((ms) => ms > 2_000);
      assert.equal(late.length, 0, `${late.length} of ${delays.length} arrived over 2 s late`);
    } finally {
      await t.close();
    }
  });
});
