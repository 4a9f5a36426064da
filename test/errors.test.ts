import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { ERRORS } from '../src/errors.js';
import { toApiError } from '../src/http/error-handler.js';
import { newTenant, startApp } from './helpers.js';

describe('error table and handler', () => {
  it('gives every code a status that matches its class', () => {
    for (const [code, { status }] of Object.entries(ERRORS)) {
      assert.match(code, /^[a-z]+(_[a-z]+)*$/, code);
      assert.ok(status >= 400 && status < 600, code);
    }
  });

  it("never lets an unexpected error's text reach the client", () => {
    const err = toApiError(new Error('connection to 10.0.0.5 failed: password authentication'));
    assert.equal(err.status, 500);
    assert.equal(err.code, 'internal_error');
    assert.doesNotMatch(err.message, /10\.0\.0\.5|password/);
  });

  it('answers an error thrown inside a handler as a bare 500 Error body', async () => {
    const t = await startApp();
    try {
      t.app.get('/v1/boom', async () => {
        throw new Error('SELECT secret FROM internals');
      });
      const res = await t.app.inject({ url: '/v1/boom' });
      assert.equal(res.statusCode, 500);
      assert.deepEqual(res.json(), {
        code: 'internal_error',
        message: 'Something went wrong on our side; it has been logged.',
        status: 500,
      });
    } finally {
      await t.close();
    }
  });

  it('never writes an API key or password to the log', async () => {
    let logged = '';
    const sink = new Writable({
      write(chunk, _enc, done) {
        logged += String(chunk);
        done();
      },
    });
    const t = await startApp({ env: { LOG_LEVEL: 'trace' }, logStream: sink });
    try {
      const tenant = await newTenant(t.app);
      await t.app.inject({ url: '/v1/pets', headers: tenant.headers });
      await t.app.inject({ url: '/v1/pets', headers: { authorization: 'Bearer as_test_leak' } });
      assert.ok(logged.includes('"reqId"'), 'the log has request ids');
      assert.ok(!logged.includes(tenant.key), 'API key in the log');
      assert.ok(!logged.includes(tenant.password), 'password in the log');
      assert.ok(!logged.includes('as_test_leak'), 'bad key in the log');
    } finally {
      await t.close();
    }
  });
});
