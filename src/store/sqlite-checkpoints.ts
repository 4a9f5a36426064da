import { Worker } from 'node:worker_threads';
import type SqliteDatabase from 'better-sqlite3';
import type { CheckpointReport, CheckpointThreadData } from './checkpoint-thread.js';

/** How often the thread checkpoints: what a GET load with the request log writes in this
 * time is ~100 pages, what the heaviest write load writes ~1,500. */
const INTERVAL_MS = 200;
/** The writer's own checkpoints while the thread works: a backstop, at 16 MB (0063 says why). */
const WRITER_BACKSTOP = 4000;
/** SQLite's own default, back on the writer's connection when the thread is gone. */
const SQLITE_AUTOCHECKPOINT = 1000;

export interface CheckpointOptions {
  /** Told when checkpoints fail (nothing is lost: the WAL keeps its frames), recover, or the
   * thread ends and SQLite's own come back. */
  warn?: (message: string) => void;
}

/** The checkpoint thread of a database, stopped before its connections close. */
export interface Checkpoints {
  close(): Promise<void>;
}

/**
 * A SQLite database's checkpoints on a thread of their own, SQLite's own back on the writer
 * should the thread fail (docs/decisions/0063-sqlite-checkpoints-off-the-event-loop.md).
 *
 * @param writer The connection whose automatic checkpoints the thread takes over.
 * @param path The database's file.
 */
export function checkpointOffThread(
  writer: SqliteDatabase.Database,
  path: string,
  options: CheckpointOptions = {},
): Checkpoints {
  const warn = options.warn ?? (() => {});
  writer.pragma(`wal_autocheckpoint = ${WRITER_BACKSTOP}`);
  const worker = new Worker(new URL('./checkpoint-thread.js', import.meta.url), {
    workerData: {
      path,
      intervalMs: INTERVAL_MS,
    } satisfies CheckpointThreadData,
  });
  let closing = false;
  const ended = new Promise<void>((resolve) => worker.once('exit', () => resolve())).then(() => {
    if (closing) return;
    if (writer.open) writer.pragma(`wal_autocheckpoint = ${SQLITE_AUTOCHECKPOINT}`);
    warn('the SQLite checkpoint thread ended: SQLite checkpoints in its commits again');
  });
  worker.on('error', (error) => warn(`the SQLite checkpoint thread failed: ${error.message}`));
  worker.on('message', (report: CheckpointReport) =>
    warn(
      'failed' in report
        ? `a SQLite checkpoint failed (the WAL keeps every commit; tried again): ${report.failed}`
        : 'SQLite checkpoints succeed again',
    ),
  );
  // The process may end without closing it: a crash leaves nothing to lose (the WAL holds every
  // commit). After the listeners: one for messages added later would hold the process again.
  worker.unref();
  let closed: Promise<void> | undefined;
  return {
    close: () => {
      closed ??= (() => {
        closing = true;
        // Waited for: the process stays until the thread's connection is closed.
        worker.ref();
        worker.postMessage('close');
        return ended;
      })();
      return closed;
    },
  };
}
