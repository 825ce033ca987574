// The fixed words an operator reads for a storage failure: why `serve` refused
// to start (decision D11), why a tool call failed while serving, why an
// administration command failed (at --log-level info). Never a path, a name,
// SQL, a SQLSTATE or driver text (operations spec §2.9): only codes of our own
// choosing are turned into text. Free of the drivers.

import { errorCode } from '../../common/errors.js';
import { StorageFailure } from '../core/ports.js';
import { postgresCauseReason } from './postgres/failure-reason.js';
import { UnsafeLocationError } from './sqlite/location.js';

/** SQLite result codes (better-sqlite3 gives the extended name, e.g. SQLITE_IOERR_WRITE) by primary code. */
const SQLITE_REASONS: Readonly<Record<string, string>> = {
  SQLITE_FULL: 'the file system is full',
  SQLITE_IOERR: 'the file system failed a read or write',
  SQLITE_CORRUPT: 'a database file is damaged',
  SQLITE_NOTADB: 'a database file is damaged',
  SQLITE_READONLY: 'a database file cannot be written',
  SQLITE_CANTOPEN: 'a database file could not be opened',
  SQLITE_PERM: 'access to a database file was refused',
  SQLITE_NOMEM: 'SQLite ran out of memory',
  SQLITE_BUSY: 'another connection holds the database',
  SQLITE_LOCKED: 'another connection holds the database',
};

/** Extended SQLite codes whose cause is more precise than their primary code's. */
const SQLITE_EXTENDED_REASONS: Readonly<Record<string, string>> = {
  // A read-only inspection meets the journal of a write that was interrupted
  // (a first `serve` killed while it built the registry, for example); only
  // a writer may roll it back, and `aipcs serve` does.
  SQLITE_READONLY_ROLLBACK: 'an interrupted write left a journal that only a writer can roll back (aipcs serve does, for the registry)',
  // Growing a -shm file failed; reading a WAL database nobody has open needs
  // one, so on a full disk even the read-only commands meet this.
  SQLITE_IOERR_SHMSIZE: "the file system has no room for a database's -shm file (is it full?)",
};

/** System error codes of file operations (Node's `code`). */
const ERRNO_REASONS: Readonly<Record<string, string>> = {
  ENOSPC: 'the file system is full',
  EDQUOT: 'the disk quota is used up',
  EIO: 'the file system reported an I/O error',
  EROFS: 'the file system is read-only',
  EACCES: 'access to a storage file was refused',
  EPERM: 'access to a storage file was refused',
  EMFILE: 'the process has too many open files',
  ENFILE: 'the system has too many open files',
};

/**
 * What the operator's own files (an export's output, an import's input)
 * fail with, said of them; ERRNO_REASONS covers the rest.
 */
const FILE_ERRNO_REASONS: Readonly<Record<string, string>> = {
  ENOENT: 'the file or its folder does not exist',
  ENOTDIR: 'a part of the path is not a folder',
  ELOOP: 'the path is a symbolic link',
  EISDIR: 'the path is a folder',
  ENOTSUP: 'the file system does not support hard links',
  EOPNOTSUPP: 'the file system does not support hard links',
  ENAMETOOLONG: 'the path is too long',
  EACCES: 'access to the file or its folder was refused',
  EPERM: 'access to the file or its folder was refused',
};

/**
 * Why an operator's file could not be used, when its system error is one we
 * can name: "the file system is full". Fixed words only, never the path.
 */
export function describeFileFailure(cause: unknown): string | undefined {
  for (const link of causeChain(cause)) {
    const code = errorCode(link);
    if (code !== undefined && !code.startsWith('SQLITE_')) return FILE_ERRNO_REASONS[code] ?? ERRNO_REASONS[code];
  }
  return undefined;
}

/** The reason of one cause, when it is one we can say in our own words. */
function causeReason(cause: unknown): string | undefined {
  if (cause instanceof UnsafeLocationError) return cause.message;
  const postgres = postgresCauseReason(cause);
  if (postgres !== undefined) return postgres;
  const code = errorCode(cause);
  if (code === undefined) return undefined;
  if (code.startsWith('SQLITE_')) return SQLITE_EXTENDED_REASONS[code] ?? SQLITE_REASONS[/^SQLITE_[A-Z]+/.exec(code)?.[0] ?? code];
  return ERRNO_REASONS[code];
}

/**
 * `error` and what it wraps: the adapters wrap a driver or file error once,
 * the application wraps the adapter's failure; a few levels cover any
 * re-wrapping.
 */
export function* causeChain(error: unknown): Generator<unknown> {
  let current = error;
  for (let depth = 0; depth < 4 && current !== undefined && current !== null; depth++) {
    yield current;
    current = current instanceof Error ? current.cause : undefined;
  }
}

/**
 * `storage <kind>`, followed by a fixed reason when `cause` is one we can
 * name: "storage unavailable: the file system is full".
 */
export function describeStorage(kind: StorageFailure['kind'], cause: unknown): string {
  for (const link of causeChain(cause)) {
    const reason = causeReason(link);
    if (reason !== undefined) return `storage ${kind}: ${reason}`;
  }
  return `storage ${kind}`;
}

export function describeStorageFailure(failure: StorageFailure): string {
  return describeStorage(failure.kind, failure.cause);
}

/** The first StorageFailure in `error`'s cause chain (an application error wraps the adapter's), if any. */
export function storageFailureIn(error: unknown): StorageFailure | undefined {
  for (const link of causeChain(error)) if (link instanceof StorageFailure) return link;
  return undefined;
}
