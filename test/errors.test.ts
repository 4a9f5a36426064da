import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { ERRORS } from '../src/errors.js';
import { toApiError } from '../src/http/error-handler.js';
import { newTenant, startApp } from './helpers.js';

/** A log stream for an app, and what was written to it. */
function captureLog() {
  let text = '';
  const stream = new Writable({
    write(chunk, _enc, done) {
      text += String(chunk);
      done();
    },
  });
  return {
    stream,
    text: () => text,
    lines: () =>
      text
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}

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
    const log = captureLog();
    const t = await startApp({ env: { LOG_LEVEL: 'trace' }, logStream: log.stream });
    try {
      const tenant = await newTenant(t.app);
      await t.app.inject({ url: '/v1/pets', headers: tenant.headers });
      await t.app.inject({ url: '/v1/pets', headers: { authorization: 'Bearer as_test_leak' } });
      const logged = log.text();
      assert.ok(logged.includes('"reqId"'), 'the log has request ids');
      assert.ok(!logged.includes(tenant.key), 'API key in the log');
      assert.ok(!logged.includes(tenant.password), 'password in the log');
      assert.ok(!logged.includes('as_test_leak'), 'bad key in the log');
    } finally {
      await t.close();
    }
  });

  it('logs a failed request with its id at the default level, and nothing for the others', async () => {
    const log = captureLog();
    const t = await startApp({ env: { LOG_LEVEL: 'warn' }, logStream: log.stream });
    try {
      t.app.get('/v1/boom', async () => {
        throw new Error('broken on purpose');
      });
      const tenant = await newTenant(t.app);
      await t.app.inject({ url: '/v1/pets', headers: tenant.headers });
      const res = await t.app.inject({ url: '/v1/boom' });
      assert.equal(res.statusCode, 500);
      const lines = log.lines();
      assert.equal(lines.length, 1, JSON.stringify(lines));
      const [line] = lines;
      assert.equal(line?.level, 50);
      assert.equal(line?.reqId, res.headers['x-request-id']);
      assert.match(JSON.stringify(line?.err), /broken on purpose/);
    } finally {
      await t.close();
    }
  });

  it('names every answer with its request id, errors included, echoing a given one', async () => {
    const t = await startApp();
    try {
      const tenant = await newTenant(t.app);
      const answers = [
        await t.app.inject({ url: '/v1/pets', headers: tenant.headers }),
        await t.app.inject({ url: '/v1/pets' }),
        await t.app.inject({ url: '/v1/no-such-route', headers: tenant.headers }),
        await t.app.inject({ url: '/v1/pets?limit=0', headers: tenant.headers }),
        await t.app.inject({ url: '/v1/pets/%E0%A4%A', headers: tenant.headers }),
        await t.app.inject({ url: '/v1/pets', headers: { ...tenant.headers, host: 'bad host' } }),
      ];
      assert.deepEqual(
        answers.map((r) => r.statusCode),
        [200, 401, 404, 400, 400, 400],
      );
      for (const res of answers) {
        assert.match(String(res.headers['x-request-id']), /^[0-9a-f-]{36}$/, res.body);
      }
      const given = await t.app.inject({
        url: '/v1/pets',
        headers: { ...tenant.headers, 'x-request-id': 'trace-42.a_b' },
      });
      assert.equal(given.headers['x-request-id'], 'trace-42.a_b');
    } finally {
      await t.close();
    }
  });

  it('ends each connection after its answer while shutting down', async () => {
    const t = await startApp();
    try {
      const tenant = await newTenant(t.app);
      const open = await t.app.inject({ url: '/v1/pets', headers: tenant.headers });
      assert.notEqual(open.headers.connection, 'close');
      t.app.ctx.lifecycle.draining = true;
      for (const url of ['/v1/pets', '/v1/nowhere', '/healthz']) {
        const res = await t.app.inject({ url, headers: tenant.headers });
        assert.equal(res.headers.connection, 'close', url);
      }
    } finally {
      t.app.ctx.lifecycle.draining = false;
      await t.close();
    }
  });
});
