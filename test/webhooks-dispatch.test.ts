import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { storable, UNSTORABLE } from '../src/webhooks/dispatcher.js';
import { Answerer, addEndpoint, deliveries } from './black-hole.js';
import { createCategory, createPet, FAST, newTenant, startApp, until } from './helpers.js';

describe("a receiver's answer, stored", { concurrency: true }, () => {
  it('keeps 1 KB of an answer with NUL and invalid UTF-8 as text, and ends failed', async () => {
    const receiver = await new Answerer().start();
    const answer = Buffer.concat([
      Buffer.from('a\0b'),
      Buffer.from([0xff, 0xc3]),
      Buffer.from('c'),
      Buffer.from('é'.repeat(1000)),
    ]);
    receiver.answer = (res) => res.writeHead(500, { 'content-type': 'text/plain' }).end(answer);
    const t = await startApp({
      env: { ...FAST, WEBHOOK_RETRY_FOR_SECONDS: '1' },
      ownStore: true,
    });
    try {
      const tenant = await newTenant(t.app);
      const id = await addEndpoint(t.app, tenant, `${receiver.url}/nul`);
      await createPet(t.app, tenant, { categoryId: (await createCategory(t.app, tenant)).id });
      await until(
        async () => (await deliveries(t.app, tenant, id))[0]?.status === 'failed',
        'the delivery to fail at the end of the retry period',
      );
      const [delivery] = await deliveries(t.app, tenant, id);
      const text = delivery?.lastResponse ?? '';
      assert.equal(delivery?.lastStatusCode, 500);
      assert.ok(text.startsWith('a\uFFFDb\uFFFD\uFFFDcé'), JSON.stringify(text.slice(0, 12)));
      assert.ok(!text.includes('\0'));
      assert.ok(Buffer.byteLength(text) <= 1024 && Buffer.byteLength(text) > 1000);
      assert.match(text.slice(6), /^é+$/, 'cut at a character');
      // Every attempt was counted, and it is sent no more: nothing is due.
      const sent = receiver.of('/nul').length;
      assert.equal(delivery?.attempts, sent);
      assert.equal(delivery?.nextAttemptAt, null);
      // Closed, the dispatcher sends nothing more: what it would have sent again is here.
      await t.close();
      assert.equal(receiver.of('/nul').length, sent, 'not sent again once failed');
    } finally {
      await t.close();
      await receiver.close();
    }
  });

  it('settles with a note when the store refuses the answer, so it is not sent again', async () => {
    const receiver = await new Answerer().start();
    receiver.answer = (res) => res.writeHead(500).end('refuse me');
    const t = await startApp({
      env: { ...FAST, WEBHOOK_RETRY_FOR_SECONDS: '1' },
      ownStore: true,
    });
    try {
      // The store itself refuses the answer, as PostgreSQL refused a NUL in text.
      await t.database.write(async (tx) => {
        if (t.database.dialect === 'postgres') {
          await sql`create function refuse_answer() returns trigger language plpgsql as $$
            begin raise exception 'refused by the test'; end $$`.execute(tx);
          await sql`create trigger refuse_answer before update on webhook_deliveries
            for each row when (new.last_response like 'refuse%')
            execute function refuse_answer()`.execute(tx);
        } else {
          await sql`create trigger refuse_answer before update on webhook_deliveries
            when new.last_response like 'refuse%'
            begin select raise(abort, 'refused by the test'); end`.execute(tx);
        }
      });
      const tenant = await newTenant(t.app);
      const id = await addEndpoint(t.app, tenant, `${receiver.url}/refused`);
      await createPet(t.app, tenant, { categoryId: (await createCategory(t.app, tenant)).id });
      await until(
        async () => (await deliveries(t.app, tenant, id))[0]?.status === 'failed',
        'the delivery to fail at the end of the retry period',
      );
      const [delivery] = await deliveries(t.app, tenant, id);
      assert.equal(delivery?.lastResponse, UNSTORABLE);
      assert.equal(delivery?.lastStatusCode, 500);
      assert.equal(delivery?.attempts, receiver.of('/refused').length);
    } finally {
      await t.close();
      await receiver.close();
    }
  });

  it('makes any text storable: NUL and lone surrogates replaced, 1 KB of UTF-8 at most', () => {
    assert.equal(storable('ok'), 'ok');
    assert.equal(storable('a\0b'), 'a\uFFFDb');
    assert.equal(storable('x\uD800y'), 'x\uFFFDy');
    const long = storable('€'.repeat(400)); // 3 bytes each
    assert.equal(long, '€'.repeat(341));
    assert.equal(storable('a'.repeat(5000)).length, 1024);
  });
});
