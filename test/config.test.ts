import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig, redactUrl } from '../src/config.js';
import { PRODUCTION_ENV } from './helpers.js';

describe('config', () => {
  it('has defaults that run on a laptop with nothing installed', () => {
    const config = loadConfig({});
    assert.equal(config.env, 'development');
    assert.equal(config.host, '127.0.0.1');
    assert.equal(config.port, 8080);
    assert.equal(config.databaseUrl, 'sqlite:./data/animal-store.db');
    assert.equal(config.demoAccount, true);
    assert.equal(config.trustProxy, false);
  });

  it('claims 128 messages at a time embedded, 32 where each takes a pool connection', () => {
    const concurrency = (env: Record<string, string>) => loadConfig(env).messages.concurrency;
    assert.equal(concurrency({}), 128);
    assert.equal(concurrency({ REDIS_URL: 'redis://127.0.0.1:6379' }), 32);
    assert.equal(concurrency({ DATABASE_URL: 'postgres://127.0.0.1/db' }), 32);
    assert.equal(concurrency({ WORKER_CONCURRENCY: '7' }), 7);
  });

  it('turns the demo account off outside development and refuses it turned on', () => {
    const prod = PRODUCTION_ENV;
    assert.equal(loadConfig(prod).demoAccount, false);
    assert.throws(() => loadConfig({ ...prod, DEMO_ACCOUNT: 'true' }), /DEMO_ACCOUNT/);
  });

  const bad: Array<[string, string]> = [
    ['PORT', 'eighty'],
    ['PORT', '70000'],
    ['APP_ENV', 'prod'],
    ['LOG_LEVEL', 'loud'],
    ['DATABASE_URL', 'mysql://localhost/db'],
    ['TRUST_PROXY', 'maybe'],
    ['TRUST_PROXY', 'proxy.internal'],
    ['PUBLIC_BASE_URL', 'not a url'],
    ['PUBLIC_BASE_URL', 'ftp://example.com'],
    ['BODY_LIMIT', '12'],
    ['PASSWORD_HASH_COST', '9'],
    ['PASSWORD_HASH_COST', '18'],
    ['REQUEST_LOG', 'false'],
    ['REQUEST_LOG_BUFFER', '0'],
    ['SESSION_SECRET', 'too short'],
    ['SESSION_SECRET', `${'x'.repeat(32)},short`],
  ];
  for (const [name, value] of bad) {
    it(`stops on ${name}=${value}, naming the variable`, () => {
      assert.throws(
        () => loadConfig({ [name]: value }),
        (err: unknown) =>
          err instanceof ConfigError && err.variable === name && err.message.includes(name),
      );
    });
  }

  it('trusts no proxy, every hop, the last N hops, or listed proxies', () => {
    assert.equal(loadConfig({ TRUST_PROXY: 'false' }).trustProxy, false);
    assert.equal(loadConfig({ TRUST_PROXY: 'true' }).trustProxy, true);
    assert.equal(loadConfig({ TRUST_PROXY: '1' }).trustProxy, 1);
    assert.deepEqual(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 127.0.0.1, ::1' }).trustProxy, [
      '10.0.0.0/8',
      '127.0.0.1',
      '::1',
    ]);
  });

  it('signs portal cookies with the first SESSION_SECRET and keeps the rest for rotation', () => {
    const [first, second] = ['n'.repeat(32), 'o'.repeat(40)];
    assert.deepEqual(loadConfig({ SESSION_SECRET: `${first}, ${second}` }).sessionSecrets, [
      first,
      second,
    ]);
    // Development needs none: each process makes its own.
    const [a, b] = [loadConfig({}).sessionSecrets, loadConfig({}).sessionSecrets];
    assert.equal(a.length, 1);
    assert.ok((a[0] ?? '').length >= 32);
    assert.notEqual(a[0], b[0]);
  });

  it('refuses the development seal key outside development, naming the variable', () => {
    // The key development seals with when WEBHOOK_SECRET_KEY is unset: public, in the source.
    const [developmentKey = ''] = loadConfig({}).webhooks.secretKeys;
    assert.ok(developmentKey.length >= 32);
    const random = 'r'.repeat(48);
    for (const APP_ENV of ['production', 'staging']) {
      const outside = {
        APP_ENV,
        PUBLIC_BASE_URL: 'https://api.example.com/v1',
        STAGING_BASE_URL: 'https://staging.example.com/v1',
        MESSAGES_BASE_URL: 'https://messages.example.com',
        SESSION_SECRET: 'a production session secret of 32+ chars',
      };
      assert.deepEqual(loadConfig({ ...outside, WEBHOOK_SECRET_KEY: random }).webhooks.secretKeys, [
        random,
      ]);
      for (const [variable, value] of [
        ['WEBHOOK_SECRET_KEY', developmentKey],
        // Kept second for a rotation, it would still open what it sealed.
        ['WEBHOOK_SECRET_KEY', `${random},${developmentKey}`],
        // It holds a comma: pasted whole it reads as two keys, its first piece long enough.
        ['WEBHOOK_SECRET_KEY', developmentKey.split(',')[0] ?? ''],
        // The seal keys derive from it when WEBHOOK_SECRET_KEY is unset.
        ['SESSION_SECRET', developmentKey],
      ] as const) {
        assert.throws(
          () => loadConfig({ ...outside, [variable]: value }),
          (err: unknown) =>
            err instanceof ConfigError &&
            err.variable === variable &&
            err.message.startsWith(
              `Invalid configuration: ${variable} must not hold the development key when APP_ENV is ${APP_ENV}`,
            ),
          `${APP_ENV}: ${variable}`,
        );
      }
    }
  });

  it('never shows a database password', () => {
    assert.equal(redactUrl('postgres://app:s3cret@db:5432/x'), 'postgres://app:***@db:5432/x');
    assert.throws(
      () => loadConfig({ DATABASE_URL: 'mysql://app:s3cret@db/x' }),
      (err: Error) => !err.message.includes('s3cret'),
    );
  });
});

describe('.env.example', () => {
  it('names every variable src/config.ts reads, and only those', () => {
    const source = readFileSync(new URL('../src/config.ts', import.meta.url), 'utf8');
    const read = new Set(
      [
        ...source.matchAll(/\(\s*env,\s*'([A-Z][A-Z0-9_]+)'/g),
        ...source.matchAll(/read\(env, '([A-Z][A-Z0-9_]+)'\)/g),
      ].map((m) => m[1]),
    );
    const example = readFileSync(new URL('../.env.example', import.meta.url), 'utf8');
    const listed = new Set([...example.matchAll(/^#?([A-Z][A-Z0-9_]+)=/gm)].map((m) => m[1]));
    assert.ok(read.size > 30, `found ${read.size} variables in src/config.ts`);
    assert.deepEqual([...listed].sort(), [...read].sort());
  });

  it('gives each default as loadConfig has it', () => {
    const example = readFileSync(new URL('../.env.example', import.meta.url), 'utf8');
    const values = Object.fromEntries(
      [...example.matchAll(/^#([A-Z][A-Z0-9_]+)=(.+)$/gm)].map((m) => [m[1], m[2]]),
    );
    // Setting every listed default explicitly changes nothing.
    assert.deepEqual(
      { ...loadConfig(values), sessionSecrets: [] },
      { ...loadConfig({}), sessionSecrets: [] },
    );
  });
});
