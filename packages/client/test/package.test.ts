/**
 * The package as users get it: packed by `npm pack` from a copy of the sources with no dist/ (so
 * `prepack` must build), linted by publint and @arethetypeswrong/cli, then installed in a
 * scratch project and loaded with `import` and with `require()` against a live service.
 *
 * The scratch project gets the tarball unpacked into its node_modules, and each dependency the
 * packed manifest declares linked from this repository's node_modules: offline and quick, and
 * a dependency missing from the manifest still fails to load.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { type Live, live } from './live.js';

const run = promisify(execFile);
const packageDir = fileURLToPath(new URL('../', import.meta.url));
const root = fileURLToPath(new URL('../../../', import.meta.url));
const manifest = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
};
/** A dev dependency's command-line script, run with this Node. */
const bin = (name: string, path: string) => join(root, 'node_modules', name, path);

/** The scratch project's programs: the same calls through `import` and through `require()`. */
const PROGRAM = (load: string) => `${load}
const { createClient, constructWebhookEvent, AnimalStoreError, NotFoundError, VERSION } = sdk;
const client = createClient({ apiKey: process.env.KEY, baseUrl: process.env.ORIGIN });
const category = await client.categories.create({ name: 'Packed' });
let missing;
try {
  await client.categories.get(999);
} catch (error) {
  missing = { base: error instanceof AnimalStoreError, kind: error instanceof NotFoundError, code: error.code };
}
const unsigned = await constructWebhookEvent('{}', undefined, 'whsec_x').catch((e) => e.reason);
const answered = category.lastResponse.status;
console.log(JSON.stringify({ category, answered, missing, limit: client.rateLimit?.limit, VERSION, unsigned }));
`;

describe('the packed package', () => {
  let work: string;
  let tarball: string;
  let server: Live;
  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'animal-store-pack-'));
    // A fresh checkout's layout: the root tsconfig the package's extends, the package's own
    // files without dist/ or node_modules/, and the repository's installed dependencies.
    cpSync(join(root, 'tsconfig.json'), join(work, 'tsconfig.json'));
    cpSync(packageDir, join(work, 'packages/client'), {
      recursive: true,
      filter: (source) => !/[/\\](dist|node_modules)$/.test(source),
    });
    symlinkSync(join(root, 'node_modules'), join(work, 'node_modules'), 'dir');
    mkdirSync(join(work, 'out'));
    await run('npm', ['pack', '--pack-destination', join(work, 'out')], {
      cwd: join(work, 'packages/client'),
      timeout: 120_000,
    });
    const [file, ...others] = readdirSync(join(work, 'out'));
    assert.ok(file && others.length === 0, 'one tarball');
    tarball = join(work, 'out', file);
    server = await live();
  });
  after(async () => {
    await server?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('holds both builds and the sources their maps name, and nothing else', async () => {
    const { stdout } = await run('tar', ['-tzf', tarball]);
    const files = stdout.trim().split('\n').sort();
    for (const file of [
      'package/package.json',
      'package/README.md',
      'package/dist/esm/index.js',
      'package/dist/esm/index.d.ts',
      'package/dist/cjs/index.js',
      'package/dist/cjs/index.d.ts',
      'package/dist/cjs/package.json',
      'package/src/index.ts',
    ]) {
      assert.ok(files.includes(file), `${file} is packed`);
    }
    const unexpected = files.filter(
      (file) => !/^package\/(package\.json|README\.md|LICENSE|dist\/.+|src\/.+\.ts)$/.test(file),
    );
    assert.deepEqual(unexpected, []);
  });

  it('is clean by publint and by @arethetypeswrong/cli (every resolution mode)', async () => {
    const publint = await run(process.execPath, [
      bin('publint', 'src/cli.js'),
      'run',
      tarball,
      '--strict',
    ]);
    assert.match(publint.stdout, /All good!/, publint.stdout);
    // Exits non-zero on any problem; no DefinitelyTyped look-up, so it runs offline.
    const attw = await run(process.execPath, [
      bin('@arethetypeswrong/cli', 'dist/index.js'),
      tarball,
      '--no-definitely-typed',
      '--format',
      'ascii',
      '--no-color',
    ]);
    assert.match(attw.stdout, /No problems found/, attw.stdout);
  });

  it('passes npm publish --dry-run clean, without reaching the registry', async () => {
    // Every connection npm makes goes to this proxy, which counts it and closes it.
    const reached: string[] = [];
    const trap = createServer((socket: Socket) => {
      reached.push('a connection');
      socket.on('error', () => {});
      socket.once('data', (chunk) => {
        reached.push(chunk.toString('latin1').split('\r\n')[0] ?? '');
        socket.destroy();
      });
    });
    trap.listen(0, '127.0.0.1');
    await once(trap, 'listening');
    const address = trap.address();
    assert.ok(address && typeof address === 'object');
    const proxied = {
      ...process.env,
      npm_config_proxy: `http://127.0.0.1:${address.port}`,
      npm_config_https_proxy: `http://127.0.0.1:${address.port}`,
      npm_config_noproxy: '',
      npm_config_fetch_retries: '0',
    };
    try {
      const release = await run(
        process.execPath,
        [join(work, 'packages/client/scripts/release.mjs'), '--dry-run-only'],
        { cwd: join(work, 'packages/client'), env: proxied, timeout: 120_000 },
      );
      assert.match(release.stdout, /npm publish --dry-run is clean/, release.stderr);
      assert.match(release.stdout + release.stderr, /\+ @animal-store\/client@/);
      assert.deepEqual(reached, [], 'the dry run asked the registry nothing');
      // The trap does see npm's requests: a ping, which must ask the registry, goes to it.
      await assert.rejects(
        run('npm', ['ping'], { cwd: join(work, 'packages/client'), env: proxied, timeout: 60_000 }),
      );
      assert.ok(reached.length > 0, 'npm ping went through the proxy');
    } finally {
      trap.close();
    }
  });

  it("installs from a checkout's folder, built", async () => {
    // npm links the folder; the package's dependencies resolve from the checkout's own.
    const project = join(work, 'linked');
    mkdirSync(project);
    writeFileSync(join(project, 'package.json'), '{"name":"linked","private":true}\n');
    await run(
      'npm',
      ['install', '--offline', '--no-audit', '--no-fund', join(work, 'packages/client')],
      {
        cwd: project,
        timeout: 120_000,
      },
    );
    const { stdout } = await run(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { VERSION, createClient } from '${manifest.name}';
console.log(VERSION, typeof createClient().pets.create);`,
      ],
      { cwd: project },
    );
    assert.equal(stdout.trim(), `${manifest.version} function`);
  });

  describe('installed in a scratch project', () => {
    let scratch: string;
    before(async () => {
      scratch = join(work, 'scratch');
      const installed = join(scratch, 'node_modules', manifest.name);
      mkdirSync(installed, { recursive: true });
      writeFileSync(join(scratch, 'package.json'), '{"name":"scratch","private":true}\n');
      await run('tar', ['-xzf', tarball, '-C', installed, '--strip-components=1']);
      const packed = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as {
        dependencies?: Record<string, string>;
      };
      for (const dependency of Object.keys(packed.dependencies ?? {})) {
        const target = join(root, 'node_modules', dependency);
        assert.ok(existsSync(target), `${dependency} is installed in the repository`);
        const link = join(scratch, 'node_modules', dependency);
        mkdirSync(dirname(link), { recursive: true });
        symlinkSync(target, link, 'dir');
      }
      writeFileSync(join(scratch, 'esm.mjs'), PROGRAM(`import * as sdk from '${manifest.name}';`));
      // CommonJS has no top-level await: the same program in an async function.
      writeFileSync(
        join(scratch, 'cjs.cjs'),
        `const sdk = require('${manifest.name}');\n(async () => {${PROGRAM('')}})().catch((e) => {\n  console.error(e);\n  process.exit(1);\n});\n`,
      );
    });

    for (const program of ['esm.mjs', 'cjs.cjs']) {
      it(`works from ${program === 'esm.mjs' ? 'ESM (import)' : 'CommonJS (require)'}`, async () => {
        const tenant = await server.tenant();
        const { stdout } = await run(process.execPath, [program], {
          cwd: scratch,
          env: { ...process.env, KEY: tenant.key, ORIGIN: server.origin },
          timeout: 30_000,
        });
        assert.deepEqual(JSON.parse(stdout), {
          category: { id: 1, name: 'Packed' },
          answered: 201,
          missing: { base: true, kind: true, code: 'not_found' },
          limit: 1e6,
          VERSION: manifest.version,
          unsigned: 'no_signature',
        });
      });
    }
  });
});
