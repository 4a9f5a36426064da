/**
 * The thread that copies one SQLite database (src/store/backup.ts): `VACUUM INTO` on a
 * connection of its own, so the process that asked (the CLI, or a test's server) keeps turning
 * its event loop and can show progress meanwhile.
 */
import { parentPort, workerData } from 'node:worker_threads';
import SqliteDatabase from 'better-sqlite3';

/** What the thread is started with. */
export interface BackupThreadData {
  path: string;
  target: string;
}

/** Copies the database as one read transaction sees it: whatever is written meanwhile, the
 * copy is the database as it was when it began (WAL: the writers are not held up). */
function copy({ path, target }: BackupThreadData): void {
  const sqlite = new SqliteDatabase(path, { fileMustExist: true });
  try {
    sqlite.prepare('vacuum into ?').run(target);
  } finally {
    sqlite.close();
  }
}

if (!parentPort) throw new Error('backup-thread.ts runs as a worker thread');
copy(workerData as BackupThreadData);
parentPort.postMessage('done');
