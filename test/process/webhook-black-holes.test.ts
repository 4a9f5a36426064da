import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Answerer, BlackHole } from '../black-hole.js';
import { databaseOfItsOwn, storeAccountKey, until } from '../helpers.js';
import { kill, type Server, startServer } from './server-process.js';

/** The soak: how long one account's receivers stay silent under a stream of events. */
const SOAK_MS = 60_000;

describe('webhooks while another account has black-hole endpoints', () => {
  let server: Server | undefined;
  let blackHole: BlackHole;
  let healthy: Answerer;
  let url = '';
  let drop = async () => {};
  before(async () => {
    ({ url, drop } = await databaseOfItsOwn({ migrated: true }));
    blackHole = await new BlackHole().start();
    healthy = await new Answerer().start();
  });
  after(async () => {
    if (server) await kill(server, 'SIGTERM');
    await blackHole.close();
    await healthy.close();
    await drop();
  });

  it("delivers a healthy account's events within 10 s for a minute, collections and all", async (t) => {
    const silent = await storeAccountKey(url);
    const well = await storeAccountKey(url);
    // A small young generation, so the server collects garbage all the time (a weakly held
    // timeout was collected before it fired); the default timeout (10 s) and slots (32).
    server = await startServer({
      DATABASE_URL: url,
      DEMO_ACCOUNT: 'false',
      NODE_OPTIONS: [process.env.NODE_OPTIONS, '--max-semi-space-size=1'].filter(Boolean).join(' '),
    });
    const base = server.base;
    const post = async (secret: string, path: string, body: unknown) => {
      const res = await fetch(`${base}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const text = await res.text();
      assert.equal(res.status, 201, `${path}: ${text}`);
      return JSON.parse(text) as { id: number };
    };
    for (let i = 0; i < 8; i++) {
      await post(silent.secret, '/v1/webhooks', {
        url: `${blackHole.url}/silent/${i}`,
        events: ['pet.created'],
      });
    }
    await post(well.secret, '/v1/webhooks', {
      url: `${healthy.url}/well`,
      events: ['pet.created'],
    });
    const silentCategory = await post(silent.secret, '/v1/categories', { name: 'Dogs' });
    const wellCategory = await post(well.secret, '/v1/categories', { name: 'Cats' });

    // For a minute: ten pets a second for the silent account (80 deliveries a second to its
    // black holes), two a second for the healthy one.
    const started = Date.now();
    let healthyPets = 0;
    let tick = 0;
    while (Date.now() - started < SOAK_MS) {
      await post(silent.secret, '/v1/pets', { name: 'Rex', categoryId: silentCategory.id });
      if (tick++ % 5 === 0) {
        await post(well.secret, '/v1/pets', { name: 'Tom', categoryId: wellCategory.id });
        healthyPets++;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await until(() => healthy.of('/well').length >= healthyPets, 'every healthy delivery', 15_000);

    const delays = healthy
      .of('/well')
      .map((r) => r.at - Date.parse((JSON.parse(r.body) as { createdAt: string }).createdAt))
      .sort((a, b) => a - b);
    const p = (q: number) => delays[Math.min(delays.length - 1, Math.floor(q * delays.length))];
    t.diagnostic(
      `healthy deliveries: ${delays.length}, delay p50 ${p(0.5)} ms, p99 ${p(0.99)} ms, ` +
        `max ${delays.at(-1)} ms; black holes: ${blackHole.receivedInAll} POSTs received, ` +
        `${blackHole.mostHeldInAll} held at most`,
    );
    assert.equal(delays.length, healthyPets, 'each healthy event delivered once');
    assert.ok(
      (delays.at(-1) ?? 0) <= 10_000,
      `the slowest healthy delivery took ${delays.at(-1)} ms`,
    );
    // The black holes were sent to all along: each slot's POST ended at its timeout, and the
    // next went out.
    assert.ok(
      blackHole.receivedInAll >= 8 * 5,
      `${blackHole.receivedInAll} POSTs to the black holes`,
    );
    assert.ok(blackHole.mostHeldInAll <= 8, 'a quarter of the 32 slots for the silent account');
  });
});
