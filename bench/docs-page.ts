/**
 * How long `/docs` takes to show its reference in Chromium (issue 54): each compiled service
 * named in its own process on 127.0.0.1, Debian's Chromium through playwright-core, each cold
 * load in a new browser with an empty profile, each warm load the same page opened again in that
 * browser. Builds take turns round by round, so that what else the machine runs weighs on each
 * alike. Times are from the navigation's start, read in the page: when the main pane shows the
 * API's title (`main h1`) and the first operation's (`main h3`), each at the frame after it
 * appears; when the script and the document had arrived; the bytes each file took on the wire;
 * and the page's main-thread time (Chromium's TaskDuration, and of it ScriptDuration).
 *
 * Usage: npm run bench:docs-page [-- build folder…] (default dist; another checkout's dist
 * beside it compares the two); ROUNDS (5); PAGE (/docs/, the reference; /docs/try/ is the
 * explorer). CHROMIUM_PATH names another Chromium.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';
import { freePort } from '../test/cluster/harness.js';
import { median } from './stats.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const builds = (process.argv.length > 2 ? process.argv.slice(2) : ['dist']).map((b) => resolve(b));
const rounds = Number(process.env.ROUNDS ?? 5);
const pagePath = process.env.PAGE ?? '/docs/';

const ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
  '--disable-sync',
];

/** Marks, in the page, when the main pane first holds the API's title and an operation's. */
const WATCH = `
  window.shown = {};
  new MutationObserver(() => {
    for (const [name, selector] of [['title', 'main h1'], ['operation', 'main h3']]) {
      if (window.shown[name] === undefined && document.querySelector(selector)) {
        window.shown[name] = null;
        requestAnimationFrame(() => { window.shown[name] = performance.now(); });
      }
    }
  }).observe(document, { childList: true, subtree: true });
`;

interface Load {
  title: number;
  operation: number;
  script: number;
  document: number;
  task: number;
  js: number;
  files: { path: string; bytes: number }[];
}

async function load(context: BrowserContext, base: string): Promise<Load> {
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send('Performance.enable');
  await page.addInitScript(WATCH);
  await page.goto(`${base}${pagePath}`, { waitUntil: 'commit' });
  await page.locator('main h3').first().waitFor({ state: 'visible', timeout: 120_000 });
  await page.waitForFunction('typeof window.shown.operation === "number"');
  const measured = (await page.evaluate(`({
    shown: window.shown,
    files: [
      ...performance.getEntriesByType('navigation'),
      ...performance.getEntriesByType('resource'),
    ].map((e) => ({
      path: new URL(e.name).pathname,
      bytes: e.transferSize,
      at: e.responseEnd,
    })),
  })`)) as {
    shown: { title: number; operation: number };
    files: { path: string; bytes: number; at: number }[];
  };
  const { metrics } = await cdp.send('Performance.getMetrics');
  const metric = (name: string) =>
    Math.round((metrics.find((m) => m.name === name)?.value ?? Number.NaN) * 1000);
  await page.close();
  const at = (pattern: RegExp) =>
    Math.round(measured.files.find((f) => pattern.test(f.path))?.at ?? Number.NaN);
  return {
    title: Math.round(measured.shown.title),
    operation: Math.round(measured.shown.operation),
    script: at(/\/js\/scalar/),
    document: at(/openapi\.json$/),
    task: metric('TaskDuration'),
    js: metric('ScriptDuration'),
    files: measured.files.map(({ path, bytes }) => ({ path, bytes })),
  };
}

interface Service {
  build: string;
  base: string;
  child: ChildProcess;
  data: string;
  cold: Load[];
  warm: Load[];
}

async function start(build: string): Promise<Service> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const data = mkdtempSync(join(tmpdir(), 'docs-page-'));
  const child = spawn(process.execPath, [join(build, 'server.js')], {
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: `sqlite:${join(data, 'store.db')}`,
      REDIS_URL: '',
      LOG_LEVEL: 'warn',
      DEMO_ACCOUNT: 'false',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  for (;;) {
    const ready = await fetch(`${base}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) break;
    if (child.exitCode !== null) throw new Error(`the service of ${build} exited at start`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return { build, base, child, data, cold: [], warm: [] };
}

const services: Service[] = [];
try {
  for (const build of builds) services.push(await start(build));
  for (let round = 0; round < rounds; round++) {
    for (const service of services) {
      const profile = mkdtempSync(join(tmpdir(), 'docs-page-profile-'));
      const context = await chromium.launchPersistentContext(profile, {
        executablePath: CHROMIUM,
        headless: true,
        args: ARGS,
        viewport: { width: 1280, height: 900 },
      });
      try {
        service.cold.push(await load(context, service.base));
        service.warm.push(await load(context, service.base));
      } finally {
        await context.close();
        rmSync(profile, { recursive: true, force: true });
      }
    }
  }
  for (const service of services) {
    console.log(`${service.build}:`);
    for (const [name, loads] of [
      ['cold', service.cold],
      ['warm', service.warm],
    ] as const) {
      const m = (key: Exclude<keyof Load, 'files'>) => median(loads.map((l) => l[key]));
      console.log(
        `  ${name}: title ${m('title')} ms, first operation ${m('operation')} ms ` +
          `(each: ${loads.map((l) => l.operation).join(', ')}); ` +
          (Number.isNaN(m('script')) ? '' : `script in by ${m('script')} ms, `) +
          (Number.isNaN(m('document')) ? '' : `document by ${m('document')} ms; `) +
          `main thread busy ${m('task')} ms, ` +
          `of it JavaScript ${m('js')} ms (medians of ${rounds})`,
      );
      const files = loads.at(-1)?.files ?? [];
      console.log(`    on the wire: ${files.map((f) => `${f.path} ${f.bytes} B`).join(', ')}`);
    }
  }
} finally {
  for (const service of services) {
    service.child.kill();
    rmSync(service.data, { recursive: true, force: true });
  }
}
