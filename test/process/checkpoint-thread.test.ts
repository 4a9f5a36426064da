import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';

const dir = mkdtempSync(join(tmpdir(), 'animal-store-checkpoints-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe("a SQLite database's checkpoint thread (decision 0063)", () => {
  it('does not keep a process alive that never closed its database', async () => {
    const url = `sqlite:${join(dir, 'store.db')}`;
    const script = join(dir, 'open.mts');
    writeFileSync(
      script,
      `const { openDatabase } = await import(${JSON.stringify(new URL('../../src/store/database.ts', import.meta.url).href)});
      const database = openDatabase(${JSON.stringify(url)}, { warn: (line) => console.log(line) });
      await database.schema.migrate();
      // Until the thread is up (a listener on it could hold the process from then on).
      await new Promise((resolve) => setTimeout(resolve, 500));
      console.log('migrated');`,
    );
    const child = spawn(process.execPath, ['--import', 'tsx', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += String(chunk);
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    const [code, signal] = await once(child, 'exit');
    clearTimeout(timer);
    assert.equal(out, 'migrated\n', 'the thread started, and said nothing');
    assert.equal(signal, null, 'the process had to be killed: something held it');
    assert.equal(code, 0);
  });
});
