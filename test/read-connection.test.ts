import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  as,
  createCategory,
  createPet,
  newTenant,
  startApp,
  type Tenant,
  type TestApp,
} from './helpers.js';

// Reads never wait for writes: on SQLite they go through a read-only connection of their own
// (WAL), so a group-commit batch that holds the writing connection across event-loop turns
// (and its fsync) is never in their way. On PostgreSQL each query takes a pool connection.

describe('reads while a write is in progress', () => {
  let t: TestApp;
  let tenant: Tenant;
  let categoryId: number;
  before(async () => {
    t = await startApp();
    tenant = await newTenant(t.app);
    categoryId = (await createCategory(t.app, tenant)).id;
    await createPet(t.app, tenant, { categoryId });
  });
  after(() => t.close());

  it('answers lists, gets and keys while a batch holds the writing connection', async () => {
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let batchDone = false;
    // A write whose work waits: its batch (its transaction, on SQLite) stays open meanwhile.
    const write = t.database
      .write(async (db) => {
        await db.selectFrom('accounts').select('id').limit(1).execute();
        await held;
      })
      .then(() => {
        batchDone = true;
      });
    try {
      await new Promise((resolve) => setTimeout(resolve, 20));
      const reads = await Promise.race([
        Promise.all([
          as(t.app, tenant, { url: '/v1/pets?limit=5' }),
          as(t.app, tenant, { url: '/v1/categories' }),
          as(t.app, tenant, { url: '/v1/store/inventory' }),
        ]),
        new Promise<'waited'>((resolve) => setTimeout(() => resolve('waited'), 2_000)),
      ]);
      assert.notEqual(reads, 'waited', 'the reads waited for the write');
      assert.deepEqual(
        (reads as Array<{ statusCode: number }>).map((r) => r.statusCode),
        [200, 200, 200],
      );
      assert.equal(batchDone, false, 'the write was still in progress');
    } finally {
      release();
      await write;
    }
  });
});
