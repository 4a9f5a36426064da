/**
 * Several instances behaving as one service (`npm run test:cluster`, also run by .ci/run):
 * three compiled instances on one private PostgreSQL and one Redis, called round robin as a
 * load balancer would. Not part of `npm test`: it starts servers and takes about a minute.
 */
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import {
  cli,
  cliKey,
  Instance,
  instanceEnv,
  Postgres,
  Redis,
  unlimited,
  until,
} from './harness.js';

const PASSWORD = 'a cluster test password';

describe('three instances on PostgreSQL and Redis', () => {
  let postgres: Postgres;
  let redis: Redis;
  let env: Record<string, string>;
  let instances: Instance[] = [];
  let db: pg.Pool;
  let turn = 0;

  /** The next instance, round robin, as the load balancer picks them. */
  const next = () => {
    const live = instances.filter((i) => i.child.exitCode === null && !i.child.killed);
    const instance = live[turn++ % live.length];
    if (!instance) throw new Error('no live instance');
    return instance;
  };
  const call = (instance: Instance, path: string, init: RequestInit = {}, key?: string) =>
    fetch(`${instance.base}${path}`, {
      ...init,
      headers: {
        ...(init.body !== undefined && { 'content-type': 'application/json' }),
        ...(key && { authorization: `Bearer ${key}` }),
        ...init.headers,
      },
    });

  /** An account made through the API, its key made with the CLI (so no request is counted). */
  async function account(plan: 'free' | 'enterprise') {
    const email = `cluster-${randomUUID()}@example.com`;
    const res = await call(next(), '/v1/accounts', {
      method: 'POST',
      body: JSON.stringify({ email, password: PASSWORD }),
    });
    assert.equal(res.status, 201, await res.text());
    if (plan === 'enterprise') unlimited(env, email);
    const key = cliKey(env, email);
    assert.match(key, /^as_live_/);
    return { email, key };
  }

  before(async () => {
    assert.ok(
      existsSync('dist/server.js'),
      'run `npm run build` first (npm run test:cluster does)',
    );
    postgres = await Postgres.create();
    redis = await Redis.create();
    env = instanceEnv(postgres.url, redis.url);
    // As a deploy pipeline does: migrate once, then start instances that only check the schema.
    cli(env, 'migrate');
    instances = await Promise.all(['a', 'b', 'c'].map((name) => Instance.start(name, env)));
    db = new pg.Pool({ connectionString: postgres.url, max: 2 });
    db.on('error', () => {});
  });

  after(async () => {
    for (const instance of instances) instance.kill('SIGKILL');
    await db?.end().catch(() => {});
    await redis?.destroy();
    postgres?.destroy();
  });

  it('shares one Free budget: exactly 60 of 90 requests in a minute are accepted', async () => {
    const { key } = await account('free');
    // All 90 must land in one UTC minute window.
    const second = new Date().getUTCSeconds();
    if (second > 45) await new Promise((r) => setTimeout(r, (61 - second) * 1000));
    const statuses: number[] = [];
    for (let batch = 0; batch < 9; batch++) {
      const answers = await Promise.all(
        Array.from({ length: 10 }, () => call(next(), '/v1/categories', {}, key)),
      );
      statuses.push(...answers.map((a) => a.status));
    }
    assert.equal(statuses.filter((s) => s === 200).length, 60);
    assert.equal(statuses.filter((s) => s === 429).length, 30);
  });

  it('refuses a key revoked through one instance on the others from the next request', async () => {
    const { email } = await account('enterprise');
    const basic = `Basic ${Buffer.from(`${email}:${PASSWORD}`).toString('base64')}`;
    const [a, b, c] = instances as [Instance, Instance, Instance];
    const created = await call(a, '/v1/keys', {
      method: 'POST',
      body: '{}',
      headers: { authorization: basic },
    });
    assert.equal(created.status, 201);
    const { id, key } = (await created.json()) as { id: string; key: string };
    assert.equal((await call(b, '/v1/pets', {}, key)).status, 200);
    assert.equal((await call(c, '/v1/pets', {}, key)).status, 200);
    const revoked = await call(a, `/v1/keys/${id}`, {
      method: 'DELETE',
      headers: { authorization: basic },
    });
    assert.equal(revoked.status, 204);
    assert.equal((await call(b, '/v1/pets', {}, key)).status, 401);
    assert.equal((await call(c, '/v1/pets', {}, key)).status, 401);
  });

  it('sends each of 300 messages posted across the instances exactly once', async () => {
    const { key } = await account('enterprise');
    const ids: string[] = [];
    for (let batch = 0; batch < 15; batch++) {
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          call(
            next(),
            '/messages',
            {
              method: 'POST',
              body: JSON.stringify({ message: `cluster ${batch}-${i}` }),
            },
            key,
          ),
        ),
      );
      for (const answer of answers) {
        assert.equal(answer.status, 202);
        ids.push(((await answer.json()) as { id: string }).id);
      }
    }
    await until(
      '300 messages sent',
      async () => {
        const { rows } = await db.query(
          "select count(*)::int as n from messages where id = any($1) and status = 'sent'",
          [ids],
        );
        return rows[0].n === 300;
      },
      60_000,
    );
    const deliveries = () => {
      const counted = new Map<string, number>();
      for (const instance of instances) {
        for (const line of instance.log.split('\n')) {
          if (!line.includes('"message sent"')) continue;
          const id = (JSON.parse(line) as { messageId: string }).messageId;
          counted.set(id, (counted.get(id) ?? 0) + 1);
        }
      }
      return counted;
    };
    // A log line reaches us through the instance's stdout pipe, possibly after the row says
    // `sent`: wait for every line before counting.
    await until(
      '300 deliveries in the logs',
      async () => {
        const counted = deliveries();
        return ids.every((id) => counted.has(id));
      },
      10_000,
    );
    const counted = deliveries();
    for (const id of ids)
      assert.equal(counted.get(id), 1, `${id} delivered ${counted.get(id) ?? 0} times`);
  });

  it('gives one success to concurrent orders for one pet through different instances', async () => {
    const { key } = await account('enterprise');
    const category = await call(
      next(),
      '/v1/categories',
      {
        method: 'POST',
        body: JSON.stringify({ name: 'Cats' }),
      },
      key,
    );
    const categoryId = ((await category.json()) as { id: number }).id;
    const pet = await call(
      next(),
      '/v1/pets',
      {
        method: 'POST',
        body: JSON.stringify({ name: 'Tom', categoryId }),
      },
      key,
    );
    const petId = ((await pet.json()) as { id: number }).id;
    const answers = await Promise.all(
      Array.from({ length: 12 }, () =>
        call(next(), '/v1/store/orders', { method: 'POST', body: JSON.stringify({ petId }) }, key),
      ),
    );
    const statuses = answers.map((a) => a.status).sort();
    assert.equal(statuses.filter((s) => s === 201).length, 1, String(statuses));
    assert.equal(statuses.filter((s) => s === 409).length, 11, String(statuses));
  });

  it('loses no acknowledged request when one instance is stopped with SIGTERM under load', async (t) => {
    const { key } = await account('enterprise');
    const category = await call(
      next(),
      '/v1/categories',
      {
        method: 'POST',
        body: JSON.stringify({ name: 'Load' }),
      },
      key,
    );
    const categoryId = ((await category.json()) as { id: number }).id;
    const pets: number[] = [];
    const messages: string[] = [];
    const refused: string[] = [];
    const stopping = instances[2] as Instance;
    let running = true;
    const worker = async (w: number) => {
      for (let n = 0; running; n++) {
        // Round robin over all three, the stopping one included, as a balancer that has
        // not noticed yet.
        const target = instances[(w + n) % 3] as Instance;
        try {
          if (n % 2 === 0) {
            const res = await call(
              target,
              '/v1/pets',
              {
                method: 'POST',
                body: JSON.stringify({ name: `load-${w}-${n}`, categoryId }),
              },
              key,
            );
            if (res.status === 201) pets.push(((await res.json()) as { id: number }).id);
            else refused.push(`${target.name} ${res.status}`);
          } else {
            const res = await call(
              target,
              '/messages',
              {
                method: 'POST',
                body: JSON.stringify({ message: `load-${w}-${n}` }),
              },
              key,
            );
            if (res.status === 202) messages.push(((await res.json()) as { id: string }).id);
            else refused.push(`${target.name} ${res.status}`);
          }
        } catch {
          refused.push(`${target.name} connection`);
        }
      }
    };
    const load = Promise.all(Array.from({ length: 12 }, (_, w) => worker(w)));
    await new Promise((r) => setTimeout(r, 1_000));
    stopping.kill('SIGTERM');
    const code = await stopping.exited;
    await new Promise((r) => setTimeout(r, 1_000));
    running = false;
    await load;

    t.diagnostic(
      `${pets.length} pets and ${messages.length} messages acknowledged; ` +
        `${refused.length} refused at the stopped instance (${[...new Set(refused)].join(', ')})`,
    );
    assert.equal(code, 0, stopping.log.slice(-2000));
    assert.ok(
      pets.length > 50 && messages.length > 50,
      `${pets.length} pets, ${messages.length} messages`,
    );
    // Refusals happen only at the stopped instance, and never as a server error.
    assert.ok(
      refused.every((r) => r.startsWith('c ')),
      refused.join(', '),
    );
    assert.ok(!refused.some((r) => / 5\d\d$/.test(r) && !r.endsWith(' 503')), refused.join(', '));
    // Ids are numbered per account: the account is the key's.
    const storedPets = await db.query(
      'select count(*)::int as n from pets p join api_keys k on k.account_id = p.account_id ' +
        'where k.hash = $2 and p.id = any($1)',
      [pets, createHash('sha256').update(key).digest('hex')],
    );
    assert.equal(storedPets.rows[0].n, pets.length);
    await until(
      'every accepted message sent',
      async () => {
        const { rows } = await db.query(
          "select count(*)::int as n from messages where id = any($1) and status = 'sent'",
          [messages],
        );
        return rows[0].n === messages.length;
      },
      60_000,
    );
    // The other two carry on; a replacement joins them.
    instances[2] = await Instance.start('c2', env);
  });

  it('answers /readyz 503 while PostgreSQL is down, and recovers when it is back', async () => {
    const { key } = await account('enterprise');
    postgres.stop();
    try {
      for (const instance of instances) {
        await until(
          `${instance.name} not ready`,
          async () => {
            const res = await call(instance, '/readyz');
            if (res.status !== 503) return false;
            const body = (await res.json()) as { details: Array<{ location: string }> };
            return body.details.some((d) => d.location === 'database');
          },
          15_000,
        );
        assert.equal((await call(instance, '/healthz')).status, 200);
      }
    } finally {
      postgres.start();
    }
    for (const instance of instances) {
      await until(
        `${instance.name} ready again`,
        async () => (await call(instance, '/readyz')).status === 200,
        30_000,
      );
      assert.equal((await call(instance, '/v1/pets', {}, key)).status, 200);
      const posted = await call(
        instance,
        '/messages',
        {
          method: 'POST',
          body: JSON.stringify({ message: 'after the outage' }),
        },
        key,
      );
      assert.equal(posted.status, 202);
    }
  });
});
