import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openDatabase } from '../../src/store/database.js';
import { databaseOfItsOwn, storeAccountKey } from '../helpers.js';
import { kill, type Server, startServer } from './server-process.js';

describe('the outbox under SIGKILL', () => {
  let server: Server | undefined;
  // A store of its own: the kill leaves writes half-answered, which no other test should meet.
  let url = '';
  let drop = async () => {};
  before(async () => {
    ({ url, drop } = await databaseOfItsOwn({ migrated: true }));
  });
  after(async () => {
    if (server) await kill(server, 'SIGKILL');
    await drop();
  });

  it('every committed pet has its event and its delivery; every event its pet', async () => {
    const { secret, accountId } = await storeAccountKey(url);
    server = await startServer({ DATABASE_URL: url, DEMO_ACCOUNT: 'false', WORKER: 'off' });
    const { base } = server;
    const headers = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
    const post = (path: string, body: unknown) =>
      fetch(`${base}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
    const category = (await (await post('/v1/categories', { name: 'Dogs' })).json()) as {
      id: number;
    };
    const hook = await post('/v1/webhooks', { url: 'http://127.0.0.1:9/hook', events: ['*'] });
    assert.equal(hook.status, 201);
    const { id: endpointId } = (await hook.json()) as { id: string };

    // Eight clients create pets as fast as they can; the process is killed among them.
    const acknowledged: number[] = [];
    let stop = false;
    const clients = Array.from({ length: 8 }, async () => {
      while (!stop) {
        try {
          const res = await post('/v1/pets', { name: 'Rex', categoryId: category.id });
          if (res.status === 201) acknowledged.push(((await res.json()) as { id: number }).id);
        } catch {
          return; // the connection died with the process
        }
      }
    });
    while (acknowledged.length < 200) await new Promise((r) => setTimeout(r, 5));
    await kill(server, 'SIGKILL');
    stop = true;
    await Promise.all(clients);

    const database = openDatabase(url, { poolSize: 2 });
    try {
      const pets = await database.reader
        .selectFrom('pets')
        .select('id')
        .where('account_id', '=', accountId)
        .execute();
      const events = await database.reader
        .selectFrom('events')
        .select(['id', 'resource'])
        .where('account_id', '=', accountId)
        .where('type', '=', 'pet.created')
        .execute();
      const deliveries = await database.reader
        .selectFrom('webhook_deliveries')
        .select('event_id')
        .where('endpoint_id', '=', endpointId)
        .execute();
      const petResources = pets.map((p) => `pets/${p.id}`).sort();
      assert.ok(pets.length >= acknowledged.length, 'every acknowledged pet is stored');
      for (const id of acknowledged) assert.ok(petResources.includes(`pets/${id}`));
      assert.deepEqual(events.map((e) => e.resource).sort(), petResources);
      assert.deepEqual(deliveries.map((d) => d.event_id).sort(), events.map((e) => e.id).sort());
    } finally {
      await database.close();
    }
  });
});
