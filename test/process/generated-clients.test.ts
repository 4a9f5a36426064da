/**
 * Three independent generators make a client from the served OpenAPI document, as an integrator
 * would: @hey-api/openapi-ts (its fetch client), openapi-typescript with openapi-fetch, and orval
 * (its fetch client). Each is type-checked, strict, with code that reads a typed event's `data`,
 * then makes a list, a create, a 404 and a message call against a live server at its default
 * base (`/v1`), the messages included (decision 0074).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { createClient as heyApi } from '@hey-api/openapi-ts';
import openapiTS, { astToString } from 'openapi-typescript';
import { generate as orval } from 'orval';
import { newTenant, startApp, type Tenant, type TestApp } from '../helpers.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** What each consumer (below) reports of its calls. */
interface Calls {
  created: number;
  listed: number;
  missing: number;
  missingCode: string | undefined;
  message: number;
  messageStatus: string | undefined;
}

/** The calls each generated client makes, and a read of a typed event's data (it does not
 * compile if `data` is unknown). */
const CONSUMERS: Record<string, string> = {
  'use-hey.ts': `
import { createClient } from './hey/client';
import { createCategory, createPet, getPet, listPets, sendMessage } from './hey/sdk.gen';
import type { Event } from './hey/types.gen';

export const petName = (event: Event): string =>
  event.type === 'pet.created' ? event.data.name : '';

export async function run(base: string, key: string) {
  const client = createClient({ baseUrl: base + '/v1', headers: { Authorization: 'Bearer ' + key } });
  const category = await createCategory({ client, body: { name: 'Hey' } });
  if (!category.data) throw new Error('no category');
  const created = await createPet({ client, body: { name: 'Hey', categoryId: category.data.id } });
  const listed = await listPets({ client, query: { limit: 10 } });
  const missing = await getPet({ client, path: { petId: 999_999 } });
  const message = await sendMessage({ client, body: { message: 'From hey-api' } });
  return {
    created: created.response?.status,
    listed: listed.data?.length ?? -1,
    missing: missing.response?.status,
    missingCode: missing.error?.code,
    message: message.response?.status,
    messageStatus: message.data?.status,
  };
}
`,
  'use-fetch.ts': `
import createClient from 'openapi-fetch';
import type { components, paths } from './openapi-typescript/schema';

export const petName = (event: components['schemas']['Event']): string =>
  event.type === 'pet.created' ? event.data.name : '';

export async function run(base: string, key: string) {
  const client = createClient<paths>({
    baseUrl: base + '/v1',
    headers: { Authorization: 'Bearer ' + key },
  });
  const category = await client.POST('/categories', { body: { name: 'Fetch' } });
  if (!category.data) throw new Error('no category');
  const created = await client.POST('/pets', {
    body: { name: 'Fetch', categoryId: category.data.id },
  });
  const listed = await client.GET('/pets', { params: { query: { limit: 10 } } });
  const missing = await client.GET('/pets/{petId}', { params: { path: { petId: 999_999 } } });
  const message = await client.POST('/messages', { body: { message: 'From openapi-fetch' } });
  return {
    created: created.response.status,
    listed: listed.data?.length ?? -1,
    missing: missing.response.status,
    missingCode: missing.error?.code,
    message: message.response.status,
    messageStatus: message.data?.status,
  };
}
`,
  'use-orval.ts': `
import { createCategory, createPet, type Event, getPet, listPets, sendMessage } from './orval/api';

export const petName = (event: Event): string =>
  event.type === 'pet.created' ? event.data.name : '';

export async function run(_base: string, key: string) {
  const init = { headers: { Authorization: 'Bearer ' + key } };
  const category = await createCategory({ name: 'Orval' }, init);
  if (category.status !== 201) throw new Error('no category');
  const created = await createPet({ name: 'Orval', categoryId: category.data.id }, init);
  const listed = await listPets({ limit: 10 }, init);
  const missing = await getPet(999_999, init);
  const message = await sendMessage({ message: 'From orval' }, init);
  return {
    created: created.status,
    listed: listed.status === 200 ? listed.data.length : -1,
    missing: missing.status,
    missingCode: missing.status === 404 ? missing.data.code : undefined,
    message: message.status,
    messageStatus: message.status === 202 ? message.data.status : undefined,
  };
}
`,
};

const TSCONFIG = {
  compilerOptions: {
    strict: true,
    noEmit: true,
    target: 'ES2022',
    module: 'ESNext',
    moduleResolution: 'bundler',
    lib: ['ES2023', 'DOM', 'DOM.Iterable'],
    skipLibCheck: true,
  },
  include: ['*.ts', '**/*.ts'],
};

describe('clients generated from the OpenAPI document', () => {
  let t: TestApp;
  let tenant: Tenant;
  let base: string;
  let dir: string;
  /** What the generators warned of. */
  const warnings: string[] = [];

  before(async () => {
    t = await startApp({ ownStore: true });
    tenant = await newTenant(t.app);
    base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    dir = mkdtempSync(join(tmpdir(), 'animal-store-generated-'));
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
    const document = await (await fetch(`${base}/v1/openapi.json`)).json();
    const input = join(dir, 'openapi.json');
    writeFileSync(input, JSON.stringify(document));
    const warn = console.warn;
    console.warn = (...args: unknown[]) => void warnings.push(args.join(' '));
    try {
      await heyApi({
        input,
        output: join(dir, 'hey'),
        plugins: ['@hey-api/client-fetch', '@hey-api/sdk', '@hey-api/typescript'],
        logs: { level: 'warn' },
      });
      mkdirSync(join(dir, 'openapi-typescript'));
      const types = astToString(await openapiTS(pathToFileURL(input)));
      writeFileSync(join(dir, 'openapi-typescript', 'schema.ts'), types);
      await orval({
        input: { target: input },
        output: { target: join(dir, 'orval', 'api.ts'), client: 'fetch', baseUrl: `${base}/v1` },
      });
    } finally {
      console.warn = warn;
    }
    for (const [file, source] of Object.entries(CONSUMERS)) writeFileSync(join(dir, file), source);
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(TSCONFIG));
  });
  after(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('generates each without a warning, and each type-checks strict, typed event data too', async () => {
    assert.deepEqual(warnings, []);
    const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const checked = await promisify(execFile)(process.execPath, [tsc, '-p', dir]).catch(
      (err: { stdout: string }) => ({ stdout: err.stdout }),
    );
    assert.equal(checked.stdout, '', checked.stdout);
  });

  for (const consumer of Object.keys(CONSUMERS)) {
    it(`${consumer}: lists, creates, reads a 404 and sends a message at the default base`, async () => {
      const { run } = (await import(pathToFileURL(join(dir, consumer)).href)) as {
        run: (base: string, key: string) => Promise<Calls>;
      };
      const calls = await run(base, tenant.key);
      assert.deepEqual(calls, {
        created: 201,
        listed: calls.listed,
        missing: 404,
        missingCode: 'not_found',
        message: 202,
        messageStatus: 'queued',
      });
      assert.ok(calls.listed >= 1, `${calls.listed} listed`);
    });
  }
});
