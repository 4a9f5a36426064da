import { chmodSync, closeSync, constants, mkdirSync, openSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { codeOf } from './store-errors.js';

/** Owner only: the folder made for a SQLite database, and the database's files. */
export const PRIVATE_FOLDER_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** The files of a database in WAL mode: the database, its write-ahead log, its shared memory. */
export const SQLITE_SUFFIXES = ['', '-wal', '-shm'] as const;

/** The sticky bit (not in fs.constants): in such a folder only a file's owner may remove it. */
const STICKY = 0o1000;

/** Someone other than the owner may do something with it (read, write or enter). */
function sharedMode(mode: number): boolean {
  return (mode & 0o077) !== 0;
}

/**
 * Makes a SQLite database's files private before SQLite opens them: a folder it makes 0700, the
 * database, `-wal` and `-shm` files 0600; a folder that exists only warned of
 * (docs/decisions/0068-fail-closed-and-private-files.md). A mode that cannot be changed (a file
 * of another user, a read-only disk) is warned about, not fatal: SQLite then opens the file or
 * refuses it as it would have.
 */
export function privateSqliteFiles(path: string, warn: (message: string) => void = () => {}): void {
  const folder = dirname(path);
  const made = mkdirSync(folder, { recursive: true, mode: PRIVATE_FOLDER_MODE });
  if (made === undefined) {
    const { mode } = statSync(folder);
    if (sharedMode(mode) && (mode & STICKY) === 0) {
      const octal = (mode & 0o777).toString(8);
      warn(
        `the folder ${folder} of the SQLite database is open to other users (mode ${octal}); ` +
          `the database's files are private (0600), but their names and sizes show: chmod 700 ${folder}`,
      );
    }
  }
  try {
    // O_EXCL: made here with its mode, or found made (by us earlier, or by another process now).
    closeSync(openSync(path, constants.O_CREAT | constants.O_EXCL | constants.O_RDWR, 0o600));
  } catch (error) {
    if (codeOf(error) !== 'EEXIST') throw error;
  }
  for (const suffix of SQLITE_SUFFIXES) tighten(`${path}${suffix}`, warn);
}

function tighten(file: string, warn: (message: string) => void): void {
  let mode: number;
  try {
    ({ mode } = statSync(file));
  } catch (error) {
    if (codeOf(error) === 'ENOENT') return; // a -wal or -shm SQLite has not made yet
    throw error;
  }
  if (!sharedMode(mode)) return;
  try {
    chmodSync(file, PRIVATE_FILE_MODE);
  } catch (error) {
    const octal = (mode & 0o777).toString(8);
    warn(
      `${file} is open to other users (mode ${octal}) and could not be made private ` +
        `(${codeOf(error) ?? String(error)}): chmod 600 ${file}`,
    );
  }
}
