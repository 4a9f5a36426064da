/**
 * The house's rules that a reading of the source keeps (docs/architecture.md): one way to write,
 * and a core that knows no capability.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';

const SRC = new URL('../src/', import.meta.url).pathname;

/** Every .ts file of src/, by its path from src/. */
function sources(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [relative(SRC, path)] : [];
  });
}

/** Who may call `Database.write` but the runner: the store, the workers, housekeeping, and the
 * request log's writer. */
const WRITERS = [
  /^store\//,
  /^http\/idempotency\.ts$/,
  /^ops\/housekeeping\.ts$/,
  /^request-log\/writer\.ts$/,
  /^messages\/processor\.ts$/,
  /^webhooks\/dispatcher\.ts$/,
];

/** The folders of the capabilities (src/capabilities.ts). */
const CAPABILITIES = ['request-log', 'webhooks', 'messages', 'catalogue', 'orders'];
/** The core: none of it imports a capability's file. */
const CORE = /^(http|plugins|domain|store|ops|limits|portal)\/|^[^/]+\.ts$/;
const ROOTS = ['capabilities.ts', 'server.ts', 'demo.ts'];

describe('the house', () => {
  it('writes through the one runner, commit, but where the store, workers, housekeeping and the log write', () => {
    const calls = sources().flatMap((file) => {
      const text = readFileSync(join(SRC, file), 'utf8');
      const found = /\b(?:database|store|db)\s*\.write\(|this\.database\s*\.write\(/.test(text);
      return found && !WRITERS.some((allowed) => allowed.test(file)) ? [file] : [];
    });
    assert.deepEqual(calls, []);
  });

  it('has a core that imports no capability (the app root included)', () => {
    const named = new RegExp(`from '(?:\\.\\./|\\./)+(?:${CAPABILITIES.join('|')})/`);
    const leaks = sources().flatMap((file) => {
      if (!CORE.test(file) || ROOTS.includes(file)) return [];
      return named.test(readFileSync(join(SRC, file), 'utf8')) ? [file] : [];
    });
    assert.deepEqual(leaks, []);
  });
});
