import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import {
  addEndpoint,
  as,
  createCategory,
  createPet,
  newTenant,
  startApp,
  stillClock,
} from './helpers.js';

/** Prometheus' own checker, where it is installed (CI installs it: Debian's `prometheus`). */
const promtool = spawnSync('promtool', ['--version']).status === 0;

/** A series' value in the exposition text. */
function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('metrics that tell the truth', () => {
  it('passes promtool check metrics', {
    skip: !promtool && 'promtool is not installed',
  }, async () => {
    const t = await startApp();
    try {
      const { body } = await t.app.inject({ url: '/metrics' });
      const checked = spawnSync('promtool', ['check', 'metrics'], {
        input: body,
        encoding: 'utf8',
      });
      assert.equal(checked.status, 0, checked.stdout + checked.stderr);
    } finally {
      await t.close();
    }
  });

  it('says a Redis that never answered is down, and /readyz names the refusal', async () => {
    // Nothing listens on port 1; the limiter lets requests through without it, so the app starts.
    const t = await startApp({
      env: { REDIS_URL: 'redis://127.0.0.1:1', RATE_LIMIT_ON_STORE_ERROR: 'open' },
    });
    try {
      const { body } = await t.app.inject({ url: '/metrics' });
      assert.equal(value(body, 'dependency_up{dependency="redis"}'), 0);
      assert.equal(value(body, 'dependency_up{dependency="database"}'), 1);
      const ready = await t.app.inject({ url: '/readyz' });
      assert.equal(ready.statusCode, 503);
      assert.match(ready.body, /ECONNREFUSED/);
      assert.doesNotMatch(ready.body, /within/);
    } finally {
      await t.close();
    }
  });

  it('shows the webhook backlog and the oldest queued message, by their age', async () => {
    const clock = stillClock();
    // No worker: deliveries and messages wait.
    const t = await startApp({ clock, env: { WORKER: 'off' } });
    try {
      const tenant = await newTenant(t.app);
      await addEndpoint(t.app, tenant, 'http://127.0.0.1:9/hook', ['pet.created']);
      const category = await createCategory(t.app, tenant);
      await createPet(t.app, tenant, { categoryId: category.id });
      await createPet(t.app, tenant, { categoryId: category.id });
      const sent = await as(t.app, tenant, {
        method: 'POST',
        url: '/messages',
        payload: { message: 'waiting' },
      });
      assert.equal(sent.statusCode, 202, sent.body);
      clock.advance(90_000);
      const { body } = await t.app.inject({ url: '/metrics' });
      assert.equal(value(body, 'webhook_deliveries_due'), 2);
      assert.equal(value(body, 'webhook_oldest_due_seconds'), 90);
      assert.equal(value(body, 'messages_queue_oldest_seconds'), 90);
    } finally {
      await t.close();
    }
  });
});
