import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { after, before, describe, it } from 'node:test';
import type { PostmanCollection } from '../../src/http/postman.js';
import { newTenant, startApp, type TestApp } from '../helpers.js';

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
  request: { method: string; url: { toString(): string } };
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

  /** What went wrong in a run: requests that failed, were not asserted, or did not hold. */
  function failuresOf(summary: RunSummary): string[] {
    const { executions, stats } = summary.run;
    const names = requestsOf(collection.item as Item[]).map((item) => item.name);
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
  });

  it('runs for someone who has an account: sign-up answers 409, the rest as before', {
    timeout: 60_000,
  }, async () => {
    const { email, password } = await newTenant(t.app);
    const summary = await run(collection, base, { email, password });
    assert.deepEqual(failuresOf(summary), []);
    const signUp = summary.run.executions[0];
    assert.equal(signUp?.response?.code, 409);
    assert.match(String(signUp?.item.name), /409/);
  });
});
