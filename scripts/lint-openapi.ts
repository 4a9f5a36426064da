/**
 * Lints the OpenAPI document the service generates with Spectral (ruleset `.spectral.yaml`).
 * Builds the app on an in-memory SQLite store, takes GET /v1/openapi.json, writes it to a
 * temporary file and runs the locally installed Spectral CLI on it. Exits with its code:
 * non-zero when the document has any finding at all (of any severity).
 *
 *   npm run lint:openapi
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { servedOpenApi } from './served-document.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * What production is configured with, for its document: the servers are its https addresses.
 * (Development adds its local http listener; nothing else differs.)
 */
export const PRODUCTION_ENV = {
  APP_ENV: 'production',
  PUBLIC_BASE_URL: 'https://api.animal-store.example/v1',
  STAGING_BASE_URL: 'https://staging.animal-store.example/v1',
  MESSAGES_BASE_URL: 'https://api.animal-store.example',
  SESSION_SECRET: 'lint-openapi-session-secret-of-32-characters',
};

function runSpectral(file: string): Promise<{ exitCode: number; output: string }> {
  const bin = join(ROOT, 'node_modules', '.bin', 'spectral');
  const args = ['lint', file, '--ruleset', '.spectral.yaml', '--fail-severity', 'hint'];
  return new Promise((done, fail) => {
    const child = spawn(bin, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
    });
    child.on('error', fail);
    // Killed by a signal: no exit code, which must not pass for success.
    child.on('close', (code) => done({ exitCode: code ?? 1, output }));
  });
}

/** Generates production's document and lints it; exit code 0 means no finding at all. */
export async function lintOpenApi(): Promise<{ exitCode: number; output: string }> {
  const document = await servedOpenApi(PRODUCTION_ENV);
  const dir = await mkdtemp(join(tmpdir(), 'animal-store-openapi-'));
  try {
    const file = join(dir, 'openapi.json');
    // Pretty-printed so that Spectral's line:column positions are readable.
    await writeFile(file, `${JSON.stringify(JSON.parse(document), null, 2)}\n`);
    return await runSpectral(file);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const invokedDirectly =
  process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href;

if (invokedDirectly) {
  try {
    const { exitCode, output } = await lintOpenApi();
    process.stdout.write(output);
    process.exitCode = exitCode;
  } catch (error) {
    console.error(error);
    process.exitCode = 1;
  }
}
