import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
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

const ROOT = new URL('..', import.meta.url).pathname;
const RULES = `${ROOT}deploy/prometheus/alerts.yml`;
const DASHBOARD = `${ROOT}deploy/grafana/animal-store.json`;

/** Prometheus' own checker, where it is installed (CI installs it: Debian's `prometheus`). */
const promtool = spawnSync('promtool', ['--version']).status === 0;

/** A series' value in the exposition text. */
function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** The metric names a PromQL expression reads (not its functions, labels or keywords). */
function metricsIn(expr: string): string[] {
  const bare = expr
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\b(by|without|on|ignoring)\s*\([^)]*\)/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/"[^"]*"/g, ' ');
  return [...bare.matchAll(/\b([a-z_][a-z0-9_]*)\b(?!\s*\()/g)]
    .map((m) => m[1] as string)
    .filter((name) => !['and', 'or', 'unless', 'bool'].includes(name));
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

describe('deploy/: alert rules and dashboard', () => {
  it('name only metrics the service serves', async () => {
    const t = await startApp();
    let served: Set<string>;
    try {
      const { body } = await t.app.inject({ url: '/metrics' });
      served = new Set(
        [...body.matchAll(/^# TYPE (\S+) (\w+)$/gm)].flatMap((m) => {
          const name = m[1] as string;
          return m[2] === 'histogram' ? [`${name}_bucket`, `${name}_sum`, `${name}_count`] : [name];
        }),
      );
    } finally {
      await t.close();
    }
    // db_pool_connections is served on PostgreSQL alone; `up` is Prometheus' own.
    served.add('db_pool_connections').add('up');
    const rules = readFileSync(RULES, 'utf8');
    const exprs = [...rules.matchAll(/expr: (\|\n((?: {10}.*\n)+)|.*)/g)].map((m) => m[2] ?? m[1]);
    const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
      panels: Array<{ targets: Array<{ expr: string }> }>;
    };
    exprs.push(...dashboard.panels.flatMap((p) => p.targets.map((target) => target.expr)));
    assert.ok(exprs.length > 20);
    const unknown = exprs.flatMap(metricsIn).filter((name) => !served.has(name));
    assert.deepEqual([...new Set(unknown)], []);
  });

  it('passes promtool check rules', { skip: !promtool && 'promtool is not installed' }, () => {
    const checked = spawnSync('promtool', ['check', 'rules', RULES], { encoding: 'utf8' });
    assert.equal(checked.status, 0, checked.stdout + checked.stderr);
  });
});
