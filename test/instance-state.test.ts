/**
 * State is owned by instances (docs/decisions/0009-state-owned-by-instances.md): nothing in
 * `src/` keeps state at module level, so two apps in one process share nothing but the process.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { Agent, createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import ts from 'typescript';
import {
  createCategory,
  createPet,
  newTenant,
  startApp,
  type Tenant,
  type TestApp,
} from './helpers.js';

const SRC = new URL('../src/', import.meta.url);

/**
 * The module-level declarations that may stay, by `file#name`, each with why it carries nothing
 * of one app to another. Everything else a `let`, a `var` or a `new` at the top of a module is
 * state shared by every app the process builds, and fails the test below.
 */
const ALLOWED: Record<string, string> = {
  'store/database.ts#sqliteMigrations':
    "the process's SQLite migrations one at a time: better-sqlite3 blocks the process's one " +
    'thread while it waits for a lock, so two in one process must not wait for each other',
  'domain/random.ts#next':
    'the read position in a buffer of CSPRNG bytes drawn ahead (as Node does for randomUUID): ' +
    'which app takes which bytes changes nothing of anyone’s ids',
  'server.ts#stopping': "the entry point's own: a second signal while the process stops",
  'http/openapi-document.ts#USE_SITE_KEYS': 'a constant set, never changed',
  'store/store-errors.ts#NETWORK_CODES': 'a constant set, never changed',
  'webhooks/address.ts#REFUSED': 'address ranges filled as the module loads, then only read',
  'webhooks/address.ts#LOOPBACK': 'address ranges filled as the module loads, then only read',
  'portal/views/account.ts#number': 'a formatter, which keeps nothing between calls',
  'webhooks/events.ts#EVENT_CURSOR': 'an immutable cursor format',
  'domain/pagination.ts#ID_CURSOR': 'an immutable cursor format',
  'webhooks/domain.ts#DELIVERY_CURSOR': 'an immutable cursor format',
  'request-log/domain.ts#REQUEST_CURSOR': 'an immutable cursor format',
  'ops/tracing.ts#propagator': 'W3C trace-context headers read and written: it keeps nothing',
  'http/openapi.ts#scalarBundle':
    "the docs page's script as shipped, compressed once a process: it never changes while " +
    'the process runs, and every app serves the same bytes (decision 0076)',
  'http/static-assets.ts#folders':
    "the portal's files as shipped, compressed once a process: they never change while the " +
    'process runs, and every app serves the same bytes (decision 0076)',
};

function* sources(dir: URL): Generator<URL> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) yield* sources(new URL(`${entry.name}/`, dir));
    else if (entry.name.endsWith('.ts')) yield new URL(entry.name, dir);
  }
}

/** `file#name` of every module-level `let`/`var` and `new`, and of class fields made so too. */
function moduleState(): string[] {
  const found: string[] = [];
  for (const url of sources(SRC)) {
    const file = url.pathname.slice(SRC.pathname.length);
    const source = ts.createSourceFile(file, readFileSync(url, 'utf8'), ts.ScriptTarget.Latest);
    for (const statement of source.statements) {
      if (ts.isVariableStatement(statement)) {
        const list = statement.declarationList;
        const constant = (list.flags & (ts.NodeFlags.Const | ts.NodeFlags.Using)) !== 0;
        for (const declaration of list.declarations) {
          const made = declaration.initializer && ts.isNewExpression(declaration.initializer);
          if (!constant || made) found.push(`${file}#${declaration.name.getText(source)}`);
        }
      }
      if (ts.isClassDeclaration(statement)) {
        // A static field is module state with a class name on it.
        for (const member of statement.members) {
          if (!ts.isPropertyDeclaration(member)) continue;
          const modifiers = ts.getModifiers(member) ?? [];
          if (modifiers.some((m) => m.kind === ts.SyntaxKind.StaticKeyword)) {
            found.push(`${file}#${statement.name?.text}.${member.name.getText(source)}`);
          }
        }
      }
    }
  }
  return found;
}

describe('state owned by instances', () => {
  it('keeps no state at the top of a module in src/, but the few listed with their reasons', () => {
    const found = moduleState();
    assert.ok(found.length > 0, 'the scan finds declarations');
    assert.deepEqual(
      found.filter((name) => !(name in ALLOWED)),
      [],
      'module-level state: make it a field of the instance that owns it, or list it here',
    );
    // A listed name that no longer exists is taken off the list.
    assert.deepEqual(
      Object.keys(ALLOWED).filter((name) => !found.includes(name)),
      [],
    );
  });

  describe('two apps in one process', () => {
    let apps: [TestApp, TestApp];
    // Both at one millisecond: what orders their event ids is each one's id clock alone.
    const at = new Date();
    before(async () => {
      const clock = { now: () => at };
      // Each on a store of its own: a key of one is unknown to the other.
      apps = [await startApp({ clock, ownStore: true }), await startApp({ clock, ownStore: true })];
    });
    after(async () => {
      for (const t of apps) await t.close();
    });

    /** The sequence digits of the account's event ids (`evt_` + 7 of the millisecond). */
    async function sequences(t: TestApp, tenant: Tenant): Promise<string[]> {
      const res = await t.app.inject({ url: '/v1/events', headers: tenant.headers });
      assert.equal(res.statusCode, 200, res.body);
      return (res.json() as Array<{ id: string }>).map((event) => event.id.slice(11, 14));
    }

    it('do not share an id clock', async () => {
      const [first, second] = apps;
      const one = await newTenant(first.app);
      const category = await createCategory(first.app, one);
      await createPet(first.app, one, { categoryId: category.id });
      await createPet(first.app, one, { categoryId: category.id });
      const two = await newTenant(second.app);
      await createPet(second.app, two, { categoryId: (await createCategory(second.app, two)).id });
      assert.deepEqual(await sequences(first, one), ['000', '001']);
      // The other app's first event of that millisecond is its own first, not the third.
      assert.deepEqual(await sequences(second, two), ['000']);
    });

    describe('on one keep-alive connection', () => {
      let front: Server;
      let agent: Agent;
      before(async () => {
        await Promise.all(apps.map((t) => t.app.ready()));
        // One listener handing each request to the app its `x-app` header names.
        front = createServer((req, res) => {
          apps[req.headers['x-app'] === 'second' ? 1 : 0].app.routing(req, res);
        });
        await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
        agent = new Agent({ keepAlive: true, maxSockets: 1 });
      });
      after(async () => {
        agent.destroy();
        await new Promise((resolve) => front.close(resolve));
      });

      function get(app: 'first' | 'second', headers: Record<string, string>) {
        const { port } = front.address() as AddressInfo;
        return new Promise<{ status: number; port: number }>((resolve, reject) => {
          const req = httpRequest(
            {
              host: '127.0.0.1',
              port,
              path: '/v1/pets',
              agent,
              headers: { ...headers, 'x-app': app },
            },
            (res) => {
              // The connection's own port, read while the answer still holds it.
              const port = res.socket.localPort ?? 0;
              res.resume();
              res.on('end', () => resolve({ status: res.statusCode ?? 0, port }));
            },
          );
          req.on('error', reject);
          req.end();
        });
      }

      it('do not share the keys a connection was verified with', async () => {
        const tenant = await newTenant(apps[0].app);
        // As many key changes in the other app (each test makes one tenant in each): by its
        // own rules a verification the first app kept would stand there, were it shared.
        await newTenant(apps[1].app);
        const first = await get('first', tenant.headers);
        assert.equal(first.status, 200);
        // The same connection, the same header, the other app: its store has no such key.
        const second = await get('second', tenant.headers);
        assert.equal(second.port, first.port, 'the same connection');
        assert.equal(second.status, 401);
      });
    });
  });
});
