import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  listenFailure,
  postgresFailure,
  sqliteFailure,
  waitingHint,
} from '../src/ops/startup-errors.js';

/** The sentences of src/ops/startup-errors.ts for errors a test server cannot easily cause
 * (the process tests in test/process/startup.test.ts meet the others for real). */
describe('start-up failure sentences', () => {
  const coded = (code: string, message = code) => Object.assign(new Error(message), { code });

  it('names DATABASE_URL for a wrong PostgreSQL password, never the password', () => {
    const url = 'postgres://animal:s3cret@db:5432/animal_store';
    const line = postgresFailure(coded('28P01'), url) ?? '';
    assert.equal(
      line,
      'PostgreSQL at db:5432/animal_store: password authentication failed for user "animal": fix the user or password in DATABASE_URL.',
    );
    assert.doesNotMatch(line, /s3cret/);
  });

  it('leaves what is worth waiting for to the waiting loop', () => {
    const url = 'postgres://animal@db/animal_store';
    assert.equal(postgresFailure(coded('ECONNREFUSED'), url), undefined);
    assert.equal(postgresFailure(coded('57P03'), url), undefined);
    assert.equal(sqliteFailure(coded('3D000'), url), undefined);
  });

  it('says a full disk is full, naming the file', () => {
    const url = 'sqlite:/var/lib/animal-store/store.db';
    assert.equal(
      sqliteFailure(coded('SQLITE_FULL', 'database or disk is full'), url),
      'The disk holding /var/lib/animal-store/store.db is full: free some space, or fix DATABASE_URL=sqlite:/var/lib/animal-store/store.db.',
    );
  });

  it('says privileges for a low port, and which setting for the metrics listener', () => {
    assert.match(listenFailure(coded('EACCES'), '0.0.0.0', 80) ?? '', /PORT=8080/);
    assert.match(
      listenFailure(coded('EADDRINUSE'), '0.0.0.0', 9464, 'METRICS_') ?? '',
      /METRICS_PORT=<another port>/,
    );
    assert.equal(listenFailure(coded('EMFILE'), '0.0.0.0', 80), undefined);
  });

  it('hints at the setting while waiting, from the first of several addresses tried', () => {
    const both = new AggregateError([coded('ECONNREFUSED'), coded('ECONNREFUSED')]);
    assert.match(waitingHint(both, 'REDIS_URL'), /connection refused.*REDIS_URL/);
    assert.match(waitingHint(coded('ENOTFOUND'), 'DATABASE_URL'), /unknown host.*DATABASE_URL/);
  });
});
