/**
 * The docs page's and the portal's files (issue 54): compressed when the client takes it,
 * the same bytes once decompressed, cached by name or revalidated by ETag; the API's own answers
 * are not compressed. And the page's SDK section, whose example type-checks against the SDK.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import type { LightMyRequestResponse } from 'fastify';
import ts from 'typescript';
import { chooseCoding, IMMUTABLE, REVALIDATE } from '../src/http/static-assets.js';
import { newTenant, startApp, type TestApp } from './helpers.js';

const SCALAR = readFileSync(
  new URL('js/standalone.js', import.meta.resolve('@scalar/fastify-api-reference')),
);
const PORTAL = new URL('../public/portal/', import.meta.url);

/** The body as it was before its Content-Encoding. */
function decoded(res: LightMyRequestResponse): Buffer {
  const coding = res.headers['content-encoding'];
  if (coding === 'br') return brotliDecompressSync(res.rawPayload);
  if (coding === 'gzip') return gunzipSync(res.rawPayload);
  assert.equal(coding, undefined);
  return res.rawPayload;
}

describe('the docs and portal files: compressed, cached, revalidated', () => {
  let t: TestApp;
  let scriptUrl: string;
  before(async () => {
    t = await startApp();
    const page = await t.app.inject({ url: '/docs/try/' });
    const src = /<script\b[^>]*\bsrc="([^"]+)"/.exec(page.body)?.[1] ?? '';
    scriptUrl = new URL(src, 'http://service/docs/try/').pathname;
  });
  after(() => t.close());

  /** Each file the pages load, with what it is on disk (or served as). */
  const files = async (): Promise<Array<[string, Buffer]>> => [
    [scriptUrl, SCALAR],
    ['/docs/try/js/scalar.js', SCALAR],
    ['/v1/openapi.json', (await t.app.inject({ url: '/v1/openapi.json' })).rawPayload],
    ['/docs/try/openapi.json', (await t.app.inject({ url: '/v1/openapi.json' })).rawPayload],
    ['/docs/', (await t.app.inject({ url: '/docs/' })).rawPayload],
    ['/portal/assets/portal.css', readFileSync(new URL('portal.css', PORTAL))],
    ['/portal/assets/portal.js', readFileSync(new URL('portal.js', PORTAL))],
  ];

  it("names the page's script by its content's hash, kept for good; the page revalidated", async () => {
    const hash = createHash('sha256').update(SCALAR).digest('hex').slice(0, 16);
    assert.equal(scriptUrl, `/docs/try/js/scalar.${hash}.js`);
    const script = await t.app.inject({ url: scriptUrl });
    assert.equal(script.statusCode, 200);
    assert.equal(script.headers['cache-control'], IMMUTABLE);
    assert.equal(script.headers['cache-control'], 'public, max-age=31536000, immutable');
    assert.match(String(script.headers['content-type']), /^application\/javascript/);
    // Another hash is no name of it.
    assert.equal(
      (await t.app.inject({ url: '/docs/try/js/scalar.0123456789abcdef.js' })).statusCode,
      404,
    );
    // The pages, and the names that keep their place, are asked for again each time.
    assert.equal((await t.app.inject({ url: '/docs/try/' })).headers['cache-control'], REVALIDATE);
    for (const [url] of (await files()).slice(1)) {
      assert.equal((await t.app.inject({ url })).headers['cache-control'], 'no-cache', url);
    }
  });

  it('sends each file br-encoded, else gzip, else as it is: the same bytes every way', async () => {
    for (const [url, raw] of await files()) {
      for (const [accept, coding] of [
        ['gzip, deflate, br, zstd', 'br'],
        ['gzip, deflate', 'gzip'],
        [undefined, undefined],
        ['identity', undefined],
      ] as const) {
        const res = await t.app.inject({
          url,
          headers: accept ? { 'accept-encoding': accept } : {},
        });
        const what = `${url}, Accept-Encoding: ${accept}`;
        assert.equal(res.statusCode, 200, what);
        assert.equal(res.headers['content-encoding'], coding, what);
        assert.equal(res.headers.vary, 'accept-encoding', what);
        assert.equal(Number(res.headers['content-length']), res.rawPayload.length, what);
        if (coding) assert.ok(res.rawPayload.length < raw.length, `${what}: compressed`);
        assert.ok(decoded(res).equals(raw), `${what}: the same bytes`);
      }
    }
  });

  it('answers If-None-Match with 304 and no body, the ETag one per coding', async () => {
    for (const [url] of await files()) {
      const tags = new Set<string>();
      for (const accept of ['br', 'gzip', 'identity']) {
        const headers = { 'accept-encoding': accept };
        const first = await t.app.inject({ url, headers });
        const etag = String(first.headers.etag);
        assert.match(etag, /^"[0-9a-f]{32}(-br|-gzip)?"$/, url);
        tags.add(etag);
        for (const ifNoneMatch of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
          const again = await t.app.inject({
            url,
            headers: { ...headers, 'if-none-match': ifNoneMatch },
          });
          assert.equal(again.statusCode, 304, `${url} ${accept} ${ifNoneMatch}`);
          assert.equal(again.rawPayload.length, 0);
          assert.equal(again.headers.etag, etag);
          assert.equal(again.headers['cache-control'], first.headers['cache-control']);
          assert.equal(again.headers.vary, 'accept-encoding');
        }
        const changed = await t.app.inject({
          url,
          headers: { ...headers, 'if-none-match': '"other"' },
        });
        assert.equal(changed.statusCode, 200, url);
      }
      assert.equal(tags.size, 3, `${url}: a tag per coding`);
    }
  });

  it("keeps the docs page's policy on its files: only its own scripts", async () => {
    for (const url of [scriptUrl, '/docs/try/js/scalar.js', '/docs/try/openapi.json', '/docs/']) {
      const res = await t.app.inject({ url, headers: { 'accept-encoding': 'br' } });
      assert.match(String(res.headers['content-security-policy']), /script-src 'self';/, url);
      assert.equal(res.headers['x-frame-options'], 'DENY', url);
    }
    const css = await t.app.inject({ url: '/portal/assets/portal.css' });
    assert.match(String(css.headers['content-security-policy']), /script-src 'self'/);
    assert.equal(css.headers['x-content-type-options'], 'nosniff');
  });

  it("answers an unknown portal file with the portal's 404", async () => {
    const res = await t.app.inject({ url: '/portal/assets/nothing.css' });
    assert.equal(res.statusCode, 404);
    assert.match(String(res.headers['content-type']), /^text\/html/);
  });

  it("compresses none of the API's own answers", async () => {
    const owner = await newTenant(t.app);
    const res = await t.app.inject({
      url: '/v1/pets',
      headers: { ...owner.headers, 'accept-encoding': 'gzip, br' },
    });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-encoding'], undefined);
    assert.equal(res.headers.etag, undefined);
  });
});

describe('Accept-Encoding, as RFC 9110 weighs it', () => {
  it('takes br before gzip unless gzip weighs more, and neither at q=0', () => {
    const cases: Array<[string | undefined, string | undefined]> = [
      [undefined, undefined],
      ['', undefined],
      ['identity', undefined],
      ['deflate', undefined],
      ['gzip', 'gzip'],
      ['x-gzip', 'gzip'],
      ['GZIP', 'gzip'],
      ['br', 'br'],
      ['gzip, br', 'br'],
      ['br;q=0.5, gzip', 'gzip'],
      ['br;q=0.5, gzip;q=0.5', 'br'],
      ['br;q=0, gzip', 'gzip'],
      ['br ; q=0 , gzip ; q=0', undefined],
      ['*', 'br'],
      ['*;q=0', undefined],
      ['br;q=0, *', 'gzip'],
      ['gzip;q=nonsense', undefined],
    ];
    for (const [header, coding] of cases) assert.equal(chooseCoding(header), coding, header);
  });
});

describe("the docs page's SDK section", () => {
  let t: TestApp;
  let description: string;
  before(async () => {
    t = await startApp({ env: { PUBLIC_BASE_URL: 'https://api.example.com/v1' } });
    description = (await t.app.inject({ url: '/v1/openapi.json' })).json().info.description;
  });
  after(() => t.close());

  it('says how to install and call @animal-store/client, at this server', () => {
    const section = /\n## SDK\n([\s\S]*?)(?=\n## )/.exec(description)?.[1] ?? '';
    assert.match(section, /`npm install @animal-store\/client`/);
    assert.match(section, /`npm pack -w @animal-store\/client`/);
    assert.match(
      section,
      /createClient\(\{ apiKey: [^,]+, baseUrl: 'https:\/\/api\.example\.com\/v1' \}\)/,
    );
  });

  it('has an example that type-checks against the SDK, strictly', { timeout: 120_000 }, () => {
    const code = /```ts\n([\s\S]*?)```/.exec(description)?.[1];
    assert.ok(code, 'no ts block');
    // Beside it, the same with a call the SDK lacks: the check sees the SDK's types.
    const [example, wrong] = typeCheck([
      code,
      code.replace('client.pets.create', 'client.pets.make'),
    ]);
    assert.deepEqual(example, []);
    assert.equal(wrong?.length, 1, wrong?.join('\n'));
  });
});

/** The compiler's complaints about each of `modules` as a user's module: strict, Node's types,
 * `@animal-store/client` from the SDK's source. */
function typeCheck(modules: string[]): string[][] {
  const files = new Map(
    modules.map((code, i) => [
      fileURLToPath(new URL(`./.docs-sdk-example-${i}.mts`, import.meta.url)),
      code,
    ]),
  );
  const options: ts.CompilerOptions = {
    strict: true,
    exactOptionalPropertyTypes: true,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    lib: ['lib.es2023.d.ts'],
    types: ['node'],
    paths: {
      '@animal-store/client': [
        fileURLToPath(new URL('../packages/client/src/index.ts', import.meta.url)),
      ],
    },
    noEmit: true,
    skipLibCheck: true,
  };
  const host = ts.createCompilerHost(options, true);
  const { fileExists, readFile, getSourceFile } = host;
  host.fileExists = (name) => files.has(name) || fileExists.call(host, name);
  host.readFile = (name) => files.get(name) ?? readFile.call(host, name);
  host.getSourceFile = (name, language, ...rest) => {
    const code = files.get(name);
    return code === undefined
      ? getSourceFile.call(host, name, language, ...rest)
      : ts.createSourceFile(name, code, language, true);
  };
  const program = ts.createProgram([...files.keys()], options, host);
  // Each module's own diagnostics: the SDK's source is checked by its own build.
  return [...files.keys()].map((file) => {
    const source = program.getSourceFile(file);
    return [
      ...program.getSyntacticDiagnostics(source),
      ...program.getSemanticDiagnostics(source),
    ].map((d) => `TS${d.code} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
  });
}
