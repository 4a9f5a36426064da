import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { until } from '../../../test/helpers.js';
import {
  type AnimalStoreClient,
  createClient,
  NotFoundError,
  ValidationError,
} from '../src/index.js';
import { type Live, live } from './live.js';

describe('the request log as a resource, against a live server', () => {
  let server: Live;
  let client: AnimalStoreClient;
  before(async () => {
    server = await live();
    client = createClient({ apiKey: (await server.tenant()).key, baseUrl: server.origin });
  });
  after(() => server?.close());

  it('finds a refused call by its requestId, lists it through every page, and counts it', async () => {
    const refused = await client.pets
      .create({ name: '', categoryId: 1, secretNote: 'hidden' } as never)
      .then(
        () => assert.fail('created'),
        (error: unknown) => error,
      );
    assert.ok(refused instanceof ValidationError);
    const requestId = refused.requestId ?? '';
    const entry = await until(
      () =>
        client.requests.get(requestId).then(
          () => true,
          () => false,
        ),
      'the entry',
    ).then(() => client.requests.get(requestId));
    assert.equal(entry.status, 400);
    assert.equal(entry.errorCode, 'validation_failed');
    assert.equal(entry.errorBody?.code, 'validation_failed');
    assert.ok(entry.requestBody?.includes('"secretNote":"[redacted]"'), entry.requestBody ?? '');
    assert.ok(!entry.requestBody?.includes('hidden'));

    const errors = await client.requests.list({ status: '4xx', limit: 1 }).toArray();
    assert.deepEqual(
      errors.map((e) => e.id),
      [requestId],
    );
    assert.ok((await client.requests.list({ limit: 1 }).toArray()).length >= 2);
    const stats = await client.requests.stats({ period: '24h' });
    assert.equal(stats.hours.length, 24);
    assert.equal(stats.totals.status4xx, 1);
    await assert.rejects(client.requests.get('no-such-request'), NotFoundError);
  });
});
