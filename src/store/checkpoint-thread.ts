/**
 * The thread that checkpoints one SQLite database (src/store/sqlite-checkpoints.ts): its own
 * connection, a passive checkpoint every `intervalMs`, stopped by the message 'close'.
 */
import { type MessagePort, parentPort, workerData } from 'node:worker_threads';
import SqliteDatabase from 'better-sqlite3';

/** What the thread is started with. */
export interface CheckpointThreadData {
  path: string;
  intervalMs: number;
}

/** What the thread tells its database: a checkpoint failed, or succeeds again after one did. */
export type CheckpointReport = { failed: string } | { recovered: true };

function checkpointEvery(port: MessagePort, { path, intervalMs }: CheckpointThreadData): void {
  const sqlite = new SqliteDatabase(path, { fileMustExist: true });
  // A checkpoint syncs the WAL before it copies its frames, and the database file after: only
  // then may a writer start the WAL again from its beginning, over what was copied.
  sqlite.pragma('synchronous = NORMAL');
  // This connection writes nothing, so it would never checkpoint by itself; said for the reader.
  sqlite.pragma('wal_autocheckpoint = 0');
  // PASSIVE never waits for a lock and never holds up the writer or the readers: it copies what
  // no reader still needs from the WAL, and the rest on a later turn.
  const checkpoint = sqlite.prepare('pragma wal_checkpoint(PASSIVE)');
  let failing = false;
  const timer = setInterval(() => {
    try {
      checkpoint.all();
      if (failing) port.postMessage({ recovered: true } satisfies CheckpointReport);
      failing = false;
    } catch (error) {
      // Nothing is lost: the frames stay in the WAL, where readers find them, and the next turn
      // tries again. Told once, not every turn.
      if (!failing) port.postMessage({ failed: String(error) } satisfies CheckpointReport);
      failing = true;
    }
  }, intervalMs);
  port.on('message', (message: unknown) => {
    if (message !== 'close') return;
    clearInterval(timer);
    sqlite.close();
    port.close();
  });
}

if (!parentPort) throw new Error('checkpoint-thread.ts runs as a worker thread');
checkpointEvery(parentPort, workerData as CheckpointThreadData);
