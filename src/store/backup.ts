import { closeSync, fsyncSync, openSync, rmSync, statSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import SqliteDatabase from 'better-sqlite3';
import type { BackupThreadData } from './backup-thread.js';
import { PRIVATE_FILE_MODE, privateSqliteFiles } from './sqlite-files.js';

/**
 * Backup and restore of the embedded store, online (docs/decisions/0072-sqlite-backups.md).
 * PostgreSQL has its own tools (`pg_dump`, point-in-time recovery): see docs/operations.md.
 */

/** A backup or restore refused before it changed anything, with what to do instead. */
export class BackupRefusedError extends Error {
  override readonly name = 'BackupRefusedError';
}

/** How far a copy is: bytes written of about how many. */
export type Progress = (written: number, total: number) => void;

const PROGRESS_EVERY_MS = 250;

/** The bytes of `path`'s pages in use: about what a compacted copy takes. */
function bytesInUse(sqlite: SqliteDatabase.Database): number {
  const pages = Number(sqlite.pragma('page_count', { simple: true }));
  const free = Number(sqlite.pragma('freelist_count', { simple: true }));
  return (pages - free) * Number(sqlite.pragma('page_size', { simple: true }));
}

/** A new file of the owner's alone, made here: never one that was there. */
function newPrivateFile(target: string): void {
  try {
    closeSync(openSync(target, 'wx', PRIVATE_FILE_MODE));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
      throw new BackupRefusedError(`${target} exists: name a file that does not, or remove it`);
    }
    throw error;
  }
}

function syncFile(file: string): void {
  const fd = openSync(file, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** A database file that SQLite finds whole and that this service made (its migrations). */
function checkStore(file: string): void {
  let sqlite: SqliteDatabase.Database;
  try {
    sqlite = new SqliteDatabase(file, { readonly: true, fileMustExist: true });
  } catch (error) {
    throw new BackupRefusedError(`${file} cannot be opened: ${(error as Error).message}`);
  }
  try {
    const check = sqlite.pragma('quick_check', { simple: true });
    if (check !== 'ok') throw new BackupRefusedError(`${file} is damaged: ${String(check)}`);
    const made = sqlite
      .prepare("select 1 from sqlite_master where type = 'table' and name = 'kysely_migration'")
      .get();
    if (!made) throw new BackupRefusedError(`${file} is not an Animal Store database`);
  } catch (error) {
    if (error instanceof BackupRefusedError) throw error;
    throw new BackupRefusedError(`${file} is not a SQLite database: ${(error as Error).message}`);
  } finally {
    sqlite.close();
  }
}

/**
 * Copies the database at `path` to the new file `target` while instances use it: one read
 * transaction (`VACUUM INTO`, on a thread of its own), so the copy holds every write committed
 * before it began and nothing half done; writers go on meanwhile. The copy is synced and
 * checked before this resolves; on failure it is removed.
 */
export async function backupSqlite(
  path: string,
  target: string,
  progress: Progress = () => {},
): Promise<{ bytes: number }> {
  const source = new SqliteDatabase(path, { readonly: true, fileMustExist: true });
  let total: number;
  try {
    total = bytesInUse(source);
  } finally {
    source.close();
  }
  // VACUUM INTO fills an empty file: made first, private, so no one else's file is written.
  newPrivateFile(target);
  const worker = new Worker(new URL('./backup-thread.js', import.meta.url), {
    workerData: { path, target } satisfies BackupThreadData,
  });
  const timer = setInterval(() => progress(statSync(target).size, total), PROGRESS_EVERY_MS);
  try {
    await new Promise<void>((resolve, reject) => {
      worker.once('message', () => resolve());
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new Error(`the backup thread ended (${code})`)));
    });
    syncFile(target);
    checkStore(target);
  } catch (error) {
    rmSync(target, { force: true });
    throw error;
  } finally {
    clearInterval(timer);
    await worker.terminate();
  }
  const bytes = statSync(target).size;
  progress(bytes, bytes);
  return { bytes };
}

/**
 * Replaces the database at `path` with the backup `from`: refused while any process has the
 * database open (an instance, a worker, a migration), since they would go on with the old
 * one. The backup is checked first; the copy goes through SQLite (its backup API), so the
 * database is either the old one or the backup, never a mix.
 */
export async function restoreSqlite(
  from: string,
  path: string,
  progress: Progress = () => {},
): Promise<{ bytes: number }> {
  checkStore(from);
  privateSqliteFiles(path);
  refuseInUse(path);
  const source = new SqliteDatabase(from, { readonly: true, fileMustExist: true });
  try {
    await source.backup(path, {
      progress: ({ totalPages, remainingPages }) => {
        progress(totalPages - remainingPages, totalPages);
        return 256;
      },
    });
  } finally {
    source.close();
  }
  const target = new SqliteDatabase(path, { fileMustExist: true });
  try {
    // The service runs it in WAL mode; a backup's header says the mode of its copy.
    target.pragma('journal_mode = WAL');
  } finally {
    target.close();
  }
  return { bytes: statSync(path).size };
}

/**
 * Refuses when another connection has the database open: in WAL mode each holds a shared lock
 * that an exclusive-mode connection's first write lock cannot get past.
 */
function refuseInUse(path: string): void {
  let sqlite: SqliteDatabase.Database;
  try {
    sqlite = new SqliteDatabase(path, { fileMustExist: true, timeout: 0 });
  } catch {
    return; // no database there yet
  }
  try {
    sqlite.pragma('locking_mode = exclusive');
    sqlite.exec('begin immediate');
    sqlite.exec('rollback');
  } catch (error) {
    if ((error as { code?: string }).code === 'SQLITE_BUSY') {
      throw new BackupRefusedError(
        `${path} is in use: stop every instance and worker that uses it, then restore`,
      );
    }
    throw error;
  } finally {
    sqlite.close();
  }
}
