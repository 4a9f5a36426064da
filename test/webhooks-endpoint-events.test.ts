import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { type Database, openDatabase } from '../src/store/database.js';
import { insertEvent } from '../src/webhooks/events-repository.js';
import { anyEndpointWants, listEndpoints, updateEndpoint } from '../src/webhooks/repository.js';
import { dialects, emptyDatabase } from './helpers.js';

// Migration 0012: the event types of webhook endpoints move from `event_types`, a string of
// types between spaces, to webhook_endpoint_events, and `enabled` becomes a boolean.

for (const dialect of dialects) {
  describe(`webhook endpoint events, the migration (${dialect})`, () => {
    let own: { url: string; drop: () => Promise<void> };
    let database: Database;
    before(async () => {
      own = await emptyDatabase(dialect);
      database = openDatabase(own.url, { poolSize: 2 });
    });
    after(async () => {
      await database.close();
      await own.drop();
    });

    const accountId = 'acct_endpoint_events';
    const at = new Date().toISOString();
    /** Deliveries to each endpoint, by endpoint. */
    const deliveries = async () => {
      const rows = await sql<{ endpoint_id: string; n: number }>`
        select endpoint_id, count(*) as n from webhook_deliveries
        group by endpoint_id order by endpoint_id`.execute(database.reader);
      return Object.fromEntries(rows.rows.map((r) => [r.endpoint_id, Number(r.n)]));
    };
    const event = (id: string, type: string) =>
      database.write((tx) =>
        insertEvent(tx, {
          account_id: accountId,
          id,
          type,
          resource: 'pets/1',
          data: '{}',
          created_at: at,
          traceparent: null,
        }),
      );

    it('moves every endpoint’s types to the table, keeps its deliveries, and fans out by it', async () => {
      await database.schema.migrateTo('0011_webhook_delivery_slots');
      await database.write(async (tx) => {
        await sql`insert into accounts (id, email, password_hash, plan, created_at)
          values (${accountId}, 'endpoint-events@example.com', 'x', 'free', ${at})`.execute(tx);
        for (const [id, types, enabled] of [
          ['we_all', ' * ', 1],
          ['we_pets', ' pet.created pet.updated ', 1],
          ['we_orders', ' order.placed ', 1],
          ['we_off', ' pet.created ', 0],
        ] as const) {
          await sql`insert into webhook_endpoints (id, account_id, url, event_types, enabled,
              secret, created_at, updated_at)
            values (${id}, ${accountId}, ${`https://example.com/${id}`}, ${types}, ${enabled},
              'sealed', ${at}, ${at})`.execute(tx);
        }
        await sql`insert into events (account_id, id, type, resource, data, created_at)
          values (${accountId}, 'evt_before', 'pet.created', 'pets/1', '{}', ${at})`.execute(tx);
        for (const endpoint of ['we_all', 'we_pets']) {
          await sql`insert into webhook_deliveries (endpoint_id, event_id, account_id, resource,
              status, attempts, available_at, created_at, updated_at)
            values (${endpoint}, 'evt_before', ${accountId}, 'pets/1', 'delivered', 1, ${at},
              ${at}, ${at})`.execute(tx);
        }
      });

      await database.schema.migrate();

      const endpoints = await listEndpoints(database.reader, accountId);
      assert.deepEqual(
        endpoints.map((e) => [e.id, e.event_types, e.enabled]),
        [
          ['we_all', ['*'], true],
          ['we_off', ['pet.created'], false],
          ['we_orders', ['order.placed'], true],
          ['we_pets', ['pet.created', 'pet.updated'], true],
        ],
      );
      // The table made anew on SQLite: no delivery went with the old one.
      assert.deepEqual(await deliveries(), { we_all: 1, we_pets: 1 });

      // The fan-out: every enabled endpoint that wants the type, or every type.
      await event('evt_after_1', 'pet.updated');
      assert.deepEqual(await deliveries(), { we_all: 2, we_pets: 2 });
      await event('evt_after_2', 'order.placed');
      assert.deepEqual(await deliveries(), { we_all: 3, we_orders: 1, we_pets: 2 });
      assert.equal(await anyEndpointWants(database.reader, accountId, 'message.sent'), true);
    });

    it('changes the types an endpoint wants, and whether it is enabled, as booleans', async () => {
      await database.write((tx) =>
        updateEndpoint(tx, accountId, 'we_all', { enabled: false, updated_at: at }),
      );
      const changed = await database.write((tx) =>
        updateEndpoint(tx, accountId, 'we_off', {
          enabled: true,
          event_types: ['message.sent'],
          updated_at: at,
        }),
      );
      assert.deepEqual([changed?.event_types, changed?.enabled], [['message.sent'], true]);
      assert.equal(await anyEndpointWants(database.reader, accountId, 'order.placed'), true);
      assert.equal(await anyEndpointWants(database.reader, accountId, 'message.failed'), false);
      await event('evt_after_3', 'message.sent');
      assert.deepEqual(await deliveries(), { we_all: 3, we_off: 1, we_orders: 1, we_pets: 2 });
    });
  });
}
