import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { after, before, describe, it } from 'node:test';
import type { PostmanCollection } from '../../src/http/postman.js';
import {
  as,
  basic,
  createCategory,
  createPet,
  newTenant,
  startApp,
  type TestApp,
} from '../helpers.js';

/** The part of newman's Node API (https://github.com/postmanlabs/newman#api-reference) used here. */
interface Newman {
  run(
    options: {
      collection: object;
      envVar: Array<{ key: string; value: string }>;
      reporters: string[];
      timeoutRequest: number;
    },
    done: (error: Error | null, summary: RunSummary) => void,
  ): void;
}
interface Execution {
  item: { name: string };
  request: { method: string; url: { toString(): string }; body?: { raw?: string } };
  response?: { code: number; text(): string };
  requestError?: Error;
  assertions?: Array<{ assertion: string; skipped?: boolean; error?: { message: string } }>;
  testScript?: Array<{ error: { message: string } }>;
  prerequestScript?: Array<{ error: { message: string } }>;
}
interface RunSummary {
  run: {
    executions: Execution[];
    stats: { requests: { total: number }; assertions: { total: number; failed: number } };
    timings: { started: number; completed: number };
  };
}

const newman = createRequire(import.meta.url)('newman') as Newman;

/** Runs the collection against `base`, with `values` (an environment's values come before the
 * collection's, as in Postman). */
function run(collection: object, base: string, values: Record<string, string> = {}) {
  return new Promise<RunSummary>((done, fail) => {
    newman.run(
      {
        collection,
        envVar: Object.entries({ baseUrl: `${base}/v1`, messagesUrl: base, ...values }).map(
          ([key, value]) => ({ key, value }),
        ),
        reporters: [],
        timeoutRequest: 10_000,
      },
      (error, summary) => (error ? fail(error) : done(summary)),
    );
  });
}

interface Item {
  name: string;
  item?: Item[];
  request?: { url: object; header?: object; body?: object; auth?: object };
}

/** What of an account a run could leave. */
interface Holdings {
  messages: number;
  pets: unknown[];
  categories: unknown[];
  orders: Array<{ id: number; status: string }>;
  webhooks: unknown[];
  keys: string[];
}

const requestsOf = (items: Item[]): Item[] =>
  items.flatMap((item) => (item.item ? requestsOf(item.item) : [item]));

describe('the Postman collection, run by newman against a fresh server', () => {
  let t: TestApp;
  let base: string;
  let collection: PostmanCollection;

  before(async () => {
    // A store of its own: the webhook the run makes must not meet other suites' dispatchers.
    t = await startApp({ ownStore: true });
    base = await t.app.listen({ host: '127.0.0.1', port: 0 });
    collection = (await t.app.inject({ url: '/v1/postman.json' })).json();
  });
  after(() => t.close());

  it('leaves no placeholder: every {{…}} is a variable of it or a Postman dynamic one', () => {
    const defined = new Set((collection.variable ?? []).map((v) => v.key));
    for (const item of requestsOf(collection.item as Item[])) {
      // What is sent, and the saved examples' requests: not descriptions, which may say `<…>`.
      const { url, header, body, auth } = item.request ?? {};
      const sent = JSON.stringify({ url, header, body, auth });
      assert.doesNotMatch(sent, /<(long|string|integer|number|boolean|dateTime)>/, item.name);
      for (const [, name] of sent.matchAll(/\{\{([^}]*)\}\}/g)) {
        assert.ok(name?.startsWith('$') || defined.has(name ?? ''), `${item.name}: {{${name}}}`);
      }
    }
    assert.doesNotMatch(JSON.stringify(collection), /<long>|<string>/);
  });

  /** What went wrong in a run: requests that failed, were not asserted, or did not hold.
   * Every request runs, once, in order, but those `skipped`. */
  function failuresOf(
    summary: RunSummary,
    skipped: RegExp[] = [/^Reset the test data$/],
  ): string[] {
    const { executions, stats } = summary.run;
    const names = requestsOf(collection.item as Item[])
      .map((item) => item.name)
      .filter((name) => !skipped.some((pattern) => pattern.test(name)));
    assert.deepEqual(
      executions.map((e) => e.item.name),
      names,
      'every request ran, once, in order',
    );
    const failures: string[] = [];
    for (const e of executions) {
      const what = `${e.item.name} (${e.request.method} ${e.request.url.toString()})`;
      const code = e.response?.code;
      if (e.requestError) failures.push(`${what}: ${e.requestError.message}`);
      if (code === undefined || code >= 500) failures.push(`${what}: answered ${code}`);
      if (/<|\{\{|\/:/.test(e.request.url.toString())) failures.push(`${what}: a placeholder`);
      if (!e.assertions?.length) failures.push(`${what}: no assertion`);
      for (const a of e.assertions ?? []) {
        if (a.error) failures.push(`${what}: ${a.assertion}: ${a.error.message} → ${code}`);
        if (a.skipped) failures.push(`${what}: ${a.assertion} skipped`);
      }
      for (const s of [...(e.prerequestScript ?? []), ...(e.testScript ?? [])]) {
        failures.push(`${what}: script error ${s.error.message}`);
      }
    }
    if (stats.assertions.failed > 0 && failures.length === 0) failures.push('a failed assertion');
    return failures;
  }

  /** What of an account a run could leave: its messages, pets, categories, orders, webhooks and
   * keys.
   * Read with `headers`, or else with a key made (after the keys are listed) and revoked here. */
  async function holdings(account: {
    email: string;
    password: string;
    headers?: object;
  }): Promise<Holdings> {
    const signedIn = { authorization: basic(account.email, account.password) };
    const keys = await t.app.inject({ url: '/v1/keys', headers: signedIn });
    assert.equal(keys.statusCode, 200, keys.body);
    let headers = account.headers;
    let made: string | undefined;
    if (!headers) {
      const key = await t.app.inject({ method: 'POST', url: '/v1/keys', headers: signedIn });
      assert.equal(key.statusCode, 201, key.body);
      headers = { authorization: `Bearer ${key.json().key}` };
      made = key.json().id;
    }
    const list = async (url: string) => {
      const res = await t.app.inject({ url, headers: { ...headers } });
      assert.equal(res.statusCode, 200, `${url}: ${res.body}`);
      return res.json();
    };
    const held = {
      // Messages have no list: counted in the store.
      messages: Number(
        (
          await t.database.reader
            .selectFrom('messages')
            .innerJoin('accounts', 'accounts.id', 'messages.account_id')
            .where('accounts.email', '=', account.email.toLowerCase())
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      ),
      pets: await list('/v1/pets'),
      categories: await list('/v1/categories'),
      orders: await list('/v1/store/orders'),
      webhooks: await list('/v1/webhooks'),
      // Their last use moves on with the run: the keys are their ids.
      keys: keys.json().map((key: { id: string }) => key.id),
    };
    if (made) {
      const revoked = await t.app.inject({
        method: 'DELETE',
        url: `/v1/keys/${made}`,
        headers: signedIn,
      });
      assert.equal(revoked.statusCode, 204, revoked.body);
    }
    return held;
  }

  const accounts = async () =>
    Number(
      (
        await t.database.reader
          .selectFrom('accounts')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );

  /** Asserts the run left `after` as `before` was: it removed everything it made. */
  function assertNothingLeft(before: Holdings, after: Holdings): void {
    assert.deepEqual(after, before);
  }

  it('runs every request in a working order, every one asserted, every assertion holding', {
    timeout: 60_000,
  }, async () => {
    const summary = await run(collection, base);
    assert.deepEqual(failuresOf(summary), []);
    // A status and a shape at least, on each request.
    const { stats, executions } = summary.run;
    assert.ok(stats.assertions.total >= 2 * executions.length, `${stats.assertions.total}`);
    const signUp = executions[0];
    assert.equal(signUp?.response?.code, 201, 'a fresh run signs up');
    // The account it signed up stays (the API closes none), empty.
    const { email, password } = JSON.parse(signUp?.request.body?.raw ?? '{}');
    const nothing = { messages: 0, pets: [], categories: [], orders: [], webhooks: [], keys: [] };
    assertNothingLeft(nothing, await holdings({ email, password }));
  });

  it('runs for someone who has an account: sign-up answers 409, the rest as before', {
    timeout: 60_000,
  }, async () => {
    const tenant = await newTenant(t.app);
    const { email, password } = tenant;
    const before = await holdings(tenant);
    const summary = await run(collection, base, { email, password });
    assert.deepEqual(failuresOf(summary), []);
    const signUp = summary.run.executions[0];
    assert.equal(signUp?.response?.code, 409);
    assert.match(String(signUp?.item.name), /409/);
    // The key it made, it revoked.
    assertNothingLeft(before, await holdings(tenant));
  });

  it('runs with a key alone in an account that has data: no sign-up, nothing left behind', {
    timeout: 60_000,
  }, async () => {
    const tenant = await newTenant(t.app);
    const cats = await createCategory(t.app, tenant, 'Cats');
    await createPet(t.app, tenant, { name: 'Tom', categoryId: cats.id });
    const placed = await as(t.app, tenant, {
      method: 'POST',
      url: '/v1/store/orders',
      payload: { petId: (await createPet(t.app, tenant, { categoryId: cats.id })).id },
    });
    assert.equal(placed.statusCode, 201, placed.body);
    const before = await holdings(tenant);
    const accountsBefore = await accounts();

    const summary = await run(collection, base, { apiKey: tenant.key });
    // Signing up and managing keys need an email and a password, which a key alone is not.
    const skipped = [
      /^Create an account/,
      /^(Create|Revoke) an API key$/,
      /^List API keys$/,
      /^Reset the test data$/,
    ];
    assert.deepEqual(failuresOf(summary, skipped), []);
    assert.equal(summary.run.stats.assertions.failed, 0);
    const sent = summary.run.executions.map((e) => `${e.request.method} ${e.request.url}`);
    assert.ok(!sent.some((s) => /\/v1\/(accounts|keys)\b/.test(s)), sent.join('\n'));

    assert.equal(await accounts(), accountsBefore, 'an account was signed up');
    assertNothingLeft(before, await holdings(tenant));
  });

  it('resets the test data when allowReset is true, and runs on', {
    timeout: 60_000,
  }, async () => {
    const tenant = await newTenant(t.app);
    const cats = await createCategory(t.app, tenant, 'Cats');
    await createPet(t.app, tenant, { name: 'Tom', categoryId: cats.id });
    const { email, password } = tenant;
    const summary = await run(collection, base, { email, password, allowReset: 'true' });
    assert.deepEqual(failuresOf(summary, []), []);
    const reset = summary.run.executions.find((e) => e.item.name === 'Reset the test data');
    assert.equal(reset?.response?.code, 200);
    // What the account held before the run went with the reset; the run removed what it made.
    const nothing = { messages: 0, pets: [], categories: [], orders: [], webhooks: [] };
    const { keys: _keys, ...held } = await holdings(tenant);
    assert.deepEqual(held, nothing);
  });
});
