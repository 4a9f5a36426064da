import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { BackupRefusedError, backupSqlite, restoreSqlite } from '../../src/store/backup.js';
import {
  as,
  createCategory,
  createPet,
  newTenant,
  sqliteDatabaseUrl,
  startApp,
  until,
} from '../helpers.js';

const fileOf = (url: string) => url.slice('sqlite:'.length);
const scratch = () => join(tmpdir(), `animal-store-backup-${randomUUID()}.db`);

describe('backup and restore of the embedded store', () => {
  it('backs up under write load, and the restore holds every write acknowledged before it', async () => {
    const store = sqliteDatabaseUrl();
    const t = await startApp({ env: { DATABASE_URL: store.url } });
    const copy = scratch();
    const restored = sqliteDatabaseUrl();
    try {
      const tenant = await newTenant(t.app);
      const category = await createCategory(t.app, tenant);
      const acknowledged: number[] = [];
      let writing = true;
      const writers = Array.from({ length: 4 }, async () => {
        while (writing) {
          const pet = await createPet(t.app, tenant, { categoryId: category.id });
          acknowledged.push(pet.id);
        }
      });
      await until(() => acknowledged.length >= 300, 'writes under way');
      const before = [...acknowledged];
      const seen: Array<[number, number]> = [];
      const { bytes } = await backupSqlite(fileOf(store.url), copy, (w, total) =>
        seen.push([w, total]),
      );
      const during = acknowledged.length - before.length;
      await until(() => acknowledged.length > before.length + during, 'writes after the backup');
      writing = false;
      await Promise.all(writers);
      assert.ok(bytes > 0);
      assert.deepEqual(seen.at(-1), [bytes, bytes], 'progress ends at the whole');
      assert.equal(statSync(copy).mode & 0o777, 0o600, 'the copy is private');

      // A store in use is never overwritten.
      await assert.rejects(restoreSqlite(copy, fileOf(store.url)), (error: Error) => {
        assert.ok(error instanceof BackupRefusedError);
        assert.match(error.message, /in use: stop every instance/);
        return true;
      });
      // A backup never writes over a file that is there.
      await assert.rejects(backupSqlite(fileOf(store.url), copy), /exists/);

      await restoreSqlite(copy, fileOf(restored.url));
      const r = await startApp({ env: { DATABASE_URL: restored.url } });
      try {
        const res = await as(r.app, tenant, { url: `/v1/pets?limit=100` });
        assert.equal(res.statusCode, 200, 'the keys and the account are there too');
        const missing = [];
        for (const id of before) {
          const got = await as(r.app, tenant, { url: `/v1/pets/${id}` });
          if (got.statusCode !== 200) missing.push(id);
        }
        assert.deepEqual(missing, [], 'every write acknowledged before the backup');
        const after = acknowledged.filter((id) => !before.includes(id));
        const later = await Promise.all(
          after.map(async (id) => (await as(r.app, tenant, { url: `/v1/pets/${id}` })).statusCode),
        );
        assert.ok(later.includes(404), 'the writes after it are not in it');
      } finally {
        await r.close();
      }
    } finally {
      await t.close();
      store.cleanup();
      rmSync(copy, { force: true });
      restored.cleanup();
    }
  });

  it('refuses to restore what is not a backup of this service', async () => {
    const junk = scratch();
    writeFileSync(junk, 'not a database');
    const target = sqliteDatabaseUrl();
    try {
      await assert.rejects(restoreSqlite(junk, fileOf(target.url)), BackupRefusedError);
    } finally {
      rmSync(junk, { force: true });
      target.cleanup();
    }
  });
});
