import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { run } from '../src/cli/main.js';
import {
  basic,
  databaseOfItsOwn,
  dialects,
  emptyDatabase,
  PRODUCTION_ENV,
  sqliteDatabaseUrl,
  startApp,
} from './helpers.js';

describe('animal-store CLI', () => {
  // A store of its own: the demo account it seeds is one per store (a second run on a shared
  // database would find it there).
  let url = '';
  let drop = async () => {};
  // The CLI and the service share the Redis (and its key prefix) when there is one, as in a
  // deployment: the CLI announces key and plan changes through it.
  const redis: Record<string, string> = process.env.TEST_REDIS_URL
    ? { REDIS_URL: process.env.TEST_REDIS_URL, REDIS_KEY_PREFIX: `test-${randomUUID()}:` }
    : {};
  const env: Record<string, string> = { LOG_LEVEL: 'silent', ...redis };
  const email = `cli-${randomUUID()}@example.com`;
  const password = 'a long enough password';
  before(async () => {
    ({ url, drop } = await databaseOfItsOwn({ migrated: true }));
    env.DATABASE_URL = url;
  });
  after(() => drop());

  it('migrates, creates an account and a key that the API accepts', async () => {
    assert.equal((await run(['migrate'], env)).code, 0);
    const created = await run(
      ['accounts', 'create', '--email', email, '--password', password],
      env,
    );
    assert.equal(created.code, 0, created.out);
    assert.match(created.out, /^Created account acct_\w+ /);

    const key = await run(['keys', 'create', '--email', email, '--name', 'cli'], env);
    assert.equal(key.code, 0, key.out);
    const secret = /as_test_[0-9A-Za-z]{40}/.exec(key.out)?.[0];
    assert.ok(secret, key.out);

    const t = await startApp({ env: { DATABASE_URL: url, ...redis } });
    try {
      const me = await t.app.inject({
        url: '/v1/account',
        headers: { authorization: `Bearer ${secret}` },
      });
      assert.equal(me.statusCode, 200);
      assert.equal(me.json().email, email);

      const keyId = /Created key (key_\w+)/.exec(key.out)?.[1] ?? '';
      const revoked = await run(['keys', 'revoke', '--key-id', keyId], env);
      assert.equal(revoked.code, 0, revoked.out);
      // On SQLite another connection's commit is seen within 10 ms (the CLI's, here in this
      // very process, can be done sooner than that).
      await new Promise((r) => setTimeout(r, 20));
      const refused = await t.app.inject({
        url: '/v1/account',
        headers: { authorization: `Bearer ${secret}` },
      });
      assert.equal(refused.statusCode, 401);
    } finally {
      await t.app.close();
    }
  });

  it('sets plans, with custom limits only on enterprise', async () => {
    const pro = await run(['accounts', 'set-plan', '--email', email, '--plan', 'pro'], env);
    assert.equal(pro.code, 0, pro.out);
    assert.match(pro.out, /pro: 300\/minute, 10000\/day/);

    const custom = await run(
      [
        'accounts',
        'set-plan',
        '--email',
        email,
        '--plan',
        'enterprise',
        '--per-minute',
        '5000',
        '--per-day',
        '2000000',
      ],
      env,
    );
    assert.equal(custom.code, 0, custom.out);
    assert.match(custom.out, /enterprise: 5000\/minute, 2000000\/day/);

    const refused = await run(
      ['accounts', 'set-plan', '--email', email, '--plan', 'free', '--per-day', '5'],
      env,
    );
    assert.equal(refused.code, 1);
    assert.match(refused.out, /enterprise/);

    const t = await startApp({ env: { DATABASE_URL: url } });
    try {
      const key = await t.app.inject({
        method: 'POST',
        url: '/v1/keys',
        headers: { authorization: basic(email, password) },
      });
      assert.equal(key.statusCode, 201);
      const me = await t.app.inject({
        url: '/v1/account',
        headers: { authorization: `Bearer ${key.json().key}` },
      });
      assert.deepEqual(me.json().limits, { perMinute: 5000, perDay: 2000000 });
      assert.equal(me.json().plan, 'enterprise');
    } finally {
      await t.app.close();
    }
  });

  it('seeds demo data into an account', async () => {
    const res = await run(['seed', '--email', email], env);
    assert.equal(res.code, 0, res.out);
    assert.match(res.out, /Added 3 categories and 6 pets/);
  });

  it('seeds once: a second seed adds nothing', async () => {
    const demo = await run(['seed'], env);
    assert.equal(demo.code, 0, demo.out);
    assert.match(demo.out, /Created the demo account/);
    const demoAgain = await run(['seed'], env);
    assert.equal(
      demoAgain.out,
      'demo@animal-store.local has the demo data already: nothing added.',
    );
    const again = await run(['seed', '--email', email, '--json'], env);
    assert.equal(again.code, 0, again.out);
    assert.deepEqual(JSON.parse(again.out), { created: false, email, pets: 0 });
    const t = await startApp({ env: { DATABASE_URL: url, ...redis } });
    try {
      const key = await run(['keys', 'create', '--email', email, '--json'], env);
      const { secret } = JSON.parse(key.out) as { secret: string };
      const pets = await t.app.inject({
        url: '/v1/pets?limit=100',
        headers: { authorization: `Bearer ${secret}` },
      });
      assert.equal(pets.json().length, 6, 'one set of demo pets');
    } finally {
      await t.app.close();
    }
  });

  it("resets an account's test data, with the sample if asked, and names a wrong --seed", async () => {
    const reset = await run(
      ['sandbox', 'reset', '--email', email, '--seed', 'sample', '--json'],
      env,
    );
    assert.equal(reset.code, 0, reset.out);
    const { removed, seeded } = JSON.parse(reset.out);
    assert.equal(removed.pets, 6, 'the demo pets seeded above');
    assert.deepEqual(seeded, { categories: 3, pets: 6, orders: 1 });
    const again = await run(['sandbox', 'reset', '--email', email], env);
    assert.equal(again.code, 0, again.out);
    assert.match(
      again.out,
      /^Reset .*: removed 6 pets, 3 categories, 1 orders, 0 messages, \d+ events/,
    );
    const wrong = await run(['sandbox', 'reset', '--email', email, '--seed', 'all'], env);
    assert.equal(wrong.code, 1);
    assert.match(wrong.out, /--seed takes sample, not all/);
    const live = await run(['sandbox', 'reset', '--email', email], { ...env, ...PRODUCTION_ENV });
    assert.equal(live.code, 1, live.out);
    assert.match(live.out, /production instance/);
  });

  it('lists accounts and keys, as text and as JSON, never with a secret', async () => {
    const accounts = await run(['accounts', 'list'], env);
    assert.equal(accounts.code, 0, accounts.out);
    assert.match(accounts.out, /^ID\s+EMAIL\s+PLAN\s+CREATED$/m);
    assert.match(accounts.out, new RegExp(`^acct_\\w+\\s+${email}\\s+enterprise\\s`, 'm'));
    const json = JSON.parse((await run(['accounts', 'list', '--json'], env)).out) as Array<{
      email: string;
    }>;
    assert.ok(json.some((account) => account.email === email));

    const created = JSON.parse(
      (await run(['keys', 'create', '--email', email, '--name', 'listed', '--json'], env)).out,
    ) as { id: string; secret: string };
    const keys = await run(['keys', 'list', '--email', email], env);
    assert.equal(keys.code, 0, keys.out);
    assert.match(keys.out, new RegExp(`^${created.id}\\s+listed\\s+as_test_\\w+…\\s`, 'm'));
    assert.ok(!keys.out.includes(created.secret));
    const listed = JSON.parse((await run(['keys', 'list', '--email', email, '--json'], env)).out);
    assert.ok(listed.some((key: { id: string }) => key.id === created.id));
    assert.ok(!JSON.stringify(listed).includes(created.secret));

    const unknown = await run(['keys', 'list', '--email', 'nobody@example.com', '--json'], env);
    assert.equal(unknown.code, 1);
    assert.deepEqual(JSON.parse(unknown.out), {
      error: 'No account with the email nobody@example.com.',
    });
  });

  it('creates a restricted key with --scopes, lists its scopes, refuses an unknown one', async () => {
    const made = JSON.parse(
      (
        await run(
          ['keys', 'create', '--email', email, '--scopes', 'orders:write,pets:read', '--json'],
          env,
        )
      ).out,
    ) as { id: string; secret: string; scopes: string[] };
    assert.deepEqual(made.scopes, ['pets:read', 'orders:write']);
    const keys = await run(['keys', 'list', '--email', email], env);
    assert.match(keys.out, /\bSCOPES\b/);
    assert.match(keys.out, new RegExp(`^${made.id}\\s.*pets:read,orders:write\\s`, 'm'));
    assert.match(keys.out, /full access/, 'keys made without --scopes have full access');
    const t = await startApp({ env: { DATABASE_URL: url, ...redis } });
    try {
      const headers = { authorization: `Bearer ${made.secret}` };
      assert.equal((await t.app.inject({ url: '/v1/pets', headers })).statusCode, 200);
      assert.equal((await t.app.inject({ url: '/v1/account', headers })).statusCode, 403);
    } finally {
      await t.close();
    }
    const wrong = await run(['keys', 'create', '--email', email, '--scopes', 'pets:all'], env);
    assert.equal(wrong.code, 2);
    assert.match(wrong.out, /pets:read, pets:write/);
  });

  it('creates a publishable key with --origins, refusing an origin that is not one', async () => {
    const made = JSON.parse(
      (
        await run(
          ['keys', 'create', '--email', email, '--origins', 'https://shop.example/', '--json'],
          env,
        )
      ).out,
    ) as { id: string; secret: string; type: string; allowedOrigins: string[] };
    assert.match(made.secret, /^as_pk_test_/);
    assert.equal(made.type, 'publishable');
    assert.deepEqual(made.allowedOrigins, ['https://shop.example']);
    const keys = await run(['keys', 'list', '--email', email], env);
    assert.match(
      keys.out,
      new RegExp(`^${made.id}\\s.*publishable from https://shop\\.example\\s`, 'm'),
    );
    const wrong = await run(
      ['keys', 'create', '--email', email, '--origins', 'https://*.shop'],
      env,
    );
    assert.equal(wrong.code, 1);
    assert.match(wrong.out, /is not an origin/);
  });

  it('resets a password: the new one works, the old one not; sessions signed out are counted', async () => {
    const t = await startApp({ env: { DATABASE_URL: url, ...redis } });
    try {
      const signIn = (pass: string) =>
        t.app.inject({
          method: 'GET',
          url: '/v1/keys',
          headers: { authorization: basic(email, pass) },
        });
      assert.equal((await signIn(password)).statusCode, 200);
      const reset = await run(['accounts', 'reset-password', '--email', email], env);
      assert.equal(reset.code, 0, reset.out);
      const fresh = reset.out.trim().split('\n').at(-1) ?? '';
      assert.match(reset.out, /reset; \d+ portal sessions? signed out/);
      assert.equal((await signIn(password)).statusCode, 401);
      assert.equal((await signIn(fresh)).statusCode, 200);

      const chosen = await run(
        ['accounts', 'reset-password', '--email', email, '--password', password, '--json'],
        env,
      );
      assert.equal(chosen.code, 0, chosen.out);
      assert.equal(JSON.parse(chosen.out).password, undefined, 'a chosen password is not echoed');
      assert.equal((await signIn(password)).statusCode, 200);

      const short = await run(
        ['accounts', 'reset-password', '--email', email, '--password', 'short'],
        env,
      );
      assert.equal(short.code, 1);
      assert.match(short.out, /at least 12 characters/);
    } finally {
      await t.app.close();
    }
  });

  it('answers bad arguments with a message and a non-zero exit code', async () => {
    const cases: Array<[string[], number, RegExp]> = [
      [['bogus'], 2, /Unknown command "bogus"/],
      [['accounts', 'create', '--email', email], 2, /--password is required/],
      [['accounts', 'create', '--email', email, '--password', password], 1, /already exists/],
      [['accounts', 'create', '--email', `x-${email}`, '--password', 'short'], 1, /at least 12/],
      [['accounts', 'set-plan', '--email', email, '--plan', 'gold'], 2, /--plan must be/],
      [
        ['accounts', 'set-plan', '--email', email, '--plan', 'enterprise', '--per-day=-3'],
        2,
        /positive integer/,
      ],
      [
        [
          'accounts',
          'set-plan',
          '--email',
          email,
          '--plan',
          'enterprise',
          '--per-day',
          '5000000000',
        ],
        2,
        /up to 2147483647/,
      ],
      [['keys', 'create', '--email', 'nobody@example.com'], 1, /No account/],
      [['keys', 'revoke', '--key-id', 'key_doesnotexist'], 1, /No API key/],
      [['keys', 'create', '--unknown-flag'], 2, /Unknown option/],
    ];
    for (const [args, code, message] of cases) {
      const res = await run(args, env);
      assert.equal(res.code, code, `${args.join(' ')}: ${res.out}`);
      assert.match(res.out, message);
    }
    const badConfig = await run(['migrate'], { DATABASE_URL: 'mysql://nope' });
    assert.equal(badConfig.code, 2);
    assert.match(badConfig.out, /DATABASE_URL/);
  });

  it('changes keys and plans on SQLite without Redis, whatever REDIS_URL says', async () => {
    // SQLite is one machine's: the service sees the CLI's commit by itself, so a Redis that
    // cannot be reached (nothing listens on port 1) is never asked.
    const file = sqliteDatabaseUrl();
    const sqlite = {
      DATABASE_URL: file.url,
      LOG_LEVEL: 'silent',
      REDIS_URL: 'redis://127.0.0.1:1',
    };
    try {
      assert.equal((await run(['migrate'], sqlite)).code, 0);
      const other = `cli-sqlite-${randomUUID()}@example.com`;
      const created = await run(
        ['accounts', 'create', '--email', other, '--password', password],
        sqlite,
      );
      assert.equal(created.code, 0, created.out);
      const key = await run(['keys', 'create', '--email', other], sqlite);
      const keyId = /Created key (key_\w+)/.exec(key.out)?.[1] ?? '';
      const planned = await run(
        ['accounts', 'set-plan', '--email', other, '--plan', 'pro'],
        sqlite,
      );
      assert.equal(planned.code, 0, planned.out);
      const revoked = await run(['keys', 'revoke', '--key-id', keyId], sqlite);
      assert.equal(revoked.code, 0, revoked.out);
    } finally {
      file.cleanup();
    }
  });
});

describe('animal-store CLI: the store’s own commands', () => {
  for (const dialect of dialects) {
    it(`migrates with DATABASE_URL alone, naming each migration, and lists them (${dialect})`, async () => {
      const made = await emptyDatabase(dialect);
      // What a server needs and migrate does not: outside development, a session secret and
      // base URLs; with METRICS=port, its port.
      const env = { DATABASE_URL: made.url, APP_ENV: 'production', METRICS: 'port' };
      try {
        const before = JSON.parse((await run(['migrate', '--status', '--json'], env)).out);
        assert.deepEqual(before.applied, []);
        if (dialect === 'sqlite') {
          assert.ok(!existsSync(made.url.slice('sqlite:'.length)), 'looking made no database');
        }
        assert.ok(before.pending.includes('0001_initial') && before.pending.length > 10);
        const migrated = await run(['migrate'], env);
        assert.equal(migrated.code, 0, migrated.out);
        assert.deepEqual(
          migrated.out.split('\n'),
          before.pending.map((name: string) => `Applied ${name}`),
        );
        const after = JSON.parse((await run(['migrate', '--status', '--json'], env)).out);
        assert.deepEqual(after, { applied: before.pending, pending: [], unknown: [] });
        const text = await run(['migrate', '--status'], env);
        assert.match(text.out, /^applied {2}0001_initial$/m);
        assert.equal((await run(['migrate'], env)).out, 'Schema is up to date.');
      } finally {
        await made.drop();
      }
    });
  }

  it('backs up and restores the embedded store, and points PostgreSQL to pg_dump', async () => {
    const file = sqliteDatabaseUrl();
    const restored = sqliteDatabaseUrl();
    const copy = join(tmpdir(), `animal-store-cli-backup-${randomUUID()}.db`);
    const email = `backup-${randomUUID()}@example.com`;
    try {
      const env = { DATABASE_URL: file.url, LOG_LEVEL: 'silent' };
      assert.equal((await run(['migrate'], env)).code, 0);
      const made = ['accounts', 'create', '--email', email, '--password', 'a long enough password'];
      assert.equal((await run(made, env)).code, 0);
      const backup = await run(['backup', copy, '--json'], env);
      assert.equal(backup.code, 0, backup.out);
      assert.equal(JSON.parse(backup.out).bytes, statSync(copy).size);
      assert.match((await run(['backup', copy], env)).out, /exists/, 'never over a file');
      assert.equal((await run(['backup'], env)).code, 2, 'FILE is required');

      const into = { DATABASE_URL: restored.url, LOG_LEVEL: 'silent' };
      const restore = await run(['restore', copy], into);
      assert.equal(restore.code, 0, restore.out);
      const accounts = await run(['accounts', 'list', '--json'], into);
      assert.ok(JSON.parse(accounts.out).some((a: { email: string }) => a.email === email));

      const pg = { DATABASE_URL: 'postgres://127.0.0.1:1/none' };
      const refused = await run(['backup', `${copy}.pg`], pg);
      assert.equal(refused.code, 1);
      assert.match(refused.out, /pg_dump/);
      assert.ok(!existsSync(`${copy}.pg`));
    } finally {
      file.cleanup();
      restored.cleanup();
      rmSync(copy, { force: true });
    }
  });
});
