// The SQLite location policy: the data root and every database file must be
// private to the effective user (root and service-stores/ 0700, files 0600,
// link count 1), never reached through a symlink, and not on a network
// filesystem. Violations are "unsafe" and make start-up fail closed.

import { chmodSync, closeSync, constants, fchmodSync, fstatSync, lstatSync, mkdirSync, openSync, readSync, statfsSync, type Stats } from 'node:fs';
import { dirname, isAbsolute, join, sep } from 'node:path';
import { sleepSync } from '../../../common/clock.js';

export class UnsafeLocationError extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'UnsafeLocationError';
  }
}

// statfs magic numbers of filesystems that are not local POSIX storage.
const NETWORK_FILESYSTEMS = new Set([
  0x6969, // NFS
  0x517b, // SMB
  0xff534d42, // CIFS
  0xfe534d42, // SMB2
  0x5346414f, // AFS
  0x00c36400, // Ceph
  0x0bd00bd0, // Lustre
  0x01021997, // 9p
]);

const uid = (): number | undefined => process.getuid?.();

function lstatOrUndefined(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

function assertPrivateDirectory(path: string, stats: Stats): void {
  if (stats.isSymbolicLink()) throw new UnsafeLocationError('a storage directory is a symbolic link');
  if (!stats.isDirectory()) throw new UnsafeLocationError('a storage directory is not a directory');
  if (uid() !== undefined && stats.uid !== uid()) throw new UnsafeLocationError('a storage directory is owned by another user');
  if ((stats.mode & 0o777) !== 0o700) throw new UnsafeLocationError('a storage directory is not mode 0700');
  void path;
}

/** Every component from / to `path` exists without symlinks; the last must be owned and not group/other-writable. */
function assertSafeAncestors(path: string): void {
  const parts = path.split(sep).filter((part) => part.length > 0);
  let current: string = sep;
  for (const part of parts) {
    current = join(current, part);
    const stats = lstatOrUndefined(current);
    if (!stats) throw new UnsafeLocationError('a parent of the data root does not exist');
    if (stats.isSymbolicLink()) throw new UnsafeLocationError('a parent of the data root is a symbolic link');
    if (!stats.isDirectory()) throw new UnsafeLocationError('a parent of the data root is not a directory');
  }
  const parent = lstatSync(path);
  if (uid() !== undefined && parent.uid !== uid()) throw new UnsafeLocationError('the parent of the data root is owned by another user');
  if ((parent.mode & 0o022) !== 0) throw new UnsafeLocationError('the parent of the data root is writable by group or others');
}

function assertLocalFilesystem(path: string): void {
  try {
    const info = statfsSync(path);
    if (NETWORK_FILESYSTEMS.has(info.type)) throw new UnsafeLocationError('the data root is on a network filesystem');
  } catch (error) {
    if (error instanceof UnsafeLocationError) throw error;
    // statfs unsupported: nothing more can be detected here.
  }
}

/**
 * SQLite's unix VFS handles paths of at most 512 bytes (mxPathname), and a
 * database opens only when its path plus the 8 bytes of `-journal` fits.
 * The longest database under a root is a service store,
 * `{root}/service-stores/svc_{32 hex}.sqlite`; a root too long for it would
 * let `serve` start and seed, then leave every materialise pending for good
 * (operation_uncertain, then storage_busy on each retry). The root is
 * refused up front instead: at most 445 bytes of UTF-8.
 */
const SQLITE_MAX_PATHNAME_BYTES = 512;
const JOURNAL_SUFFIX_BYTES = '-journal'.length;
const LONGEST_STORE_NAME = `svc_${'0'.repeat(32)}.sqlite`;

/** Whether every database path under `root` is short enough for SQLite to open. */
function fitsSqlitePaths(root: string): boolean {
  return Buffer.byteLength(join(root, 'service-stores', LONGEST_STORE_NAME), 'utf8') + JOURNAL_SUFFIX_BYTES <= SQLITE_MAX_PATHNAME_BYTES;
}

/**
 * The textual rules of operations spec §2.5.2: absolute, not `/`, no `.` or
 * `..` component, no NUL, none of the prefixes `file:`, `//`, `\\`. The text
 * is taken as written, never normalised: `/a/../b` is refused, not read as `/b`.
 * Also refused: a root too long for SQLite's paths (above). No file system
 * access: what composition refuses before any storage is looked at (§1.8).
 */
export function checkRootText(root: string): void {
  if (root.includes('\u0000')) throw new UnsafeLocationError('the data root contains NUL');
  if (root.startsWith('file:') || root.startsWith('//') || root.startsWith('\\\\')) throw new UnsafeLocationError('the data root has a forbidden prefix');
  if (!isAbsolute(root)) throw new UnsafeLocationError('the data root is not absolute');
  const components = root.split(sep).filter((part) => part.length > 0);
  if (components.length === 0) throw new UnsafeLocationError('the data root is the filesystem root');
  if (components.some((part) => part === '.' || part === '..')) throw new UnsafeLocationError('the data root has a . or .. component');
  if (!fitsSqlitePaths(root)) throw new UnsafeLocationError('the data root is too long for SQLite (its database paths would exceed 512 bytes)');
}

export interface DataRootPaths {
  readonly root: string;
  readonly registry: string;
  readonly serviceStores: string;
}

export function dataRootPaths(root: string): DataRootPaths {
  return { root, registry: join(root, 'registry.sqlite'), serviceStores: join(root, 'service-stores') };
}

/**
 * Where the walk to a platform-default root starts (operations spec §3.2.2):
 * the directory above `.local/share/aipcs` (macOS: `Library/Application
 * Support/aipcs`), normally HOME, or else the parent of the `aipcs` leaf (a
 * custom XDG_DATA_HOME); and the directories walked from there, root last.
 */
function defaultRootLayout(root: string): { readonly anchor: string; readonly components: readonly string[] } {
  const parts = root.split(sep).filter((part) => part.length > 0);
  const suffix = process.platform === 'darwin' ? ['Library', 'Application Support', 'aipcs'] : ['.local', 'share', 'aipcs'];
  const tail = parts.slice(-suffix.length);
  const walked = tail.length === suffix.length && tail.every((part, index) => part === suffix[index]) ? suffix : parts.slice(-1);
  if (walked.at(-1) !== 'aipcs' || parts.length < walked.length) throw new UnsafeLocationError('the default data root has an unexpected layout');
  return { anchor: sep + parts.slice(0, -walked.length).join(sep), components: walked };
}

/**
 * The anchor and the directories between it and a default root: the anchor
 * must exist (it is never created), and it and every walked directory must
 * be owned by the effective user and not writable by group or others; with
 * `create`, missing walked directories are made 0700. Returns false when
 * a walked directory is missing and `create` is off.
 */
function checkDefaultRootParents(root: string, create: boolean): boolean {
  const { anchor, components } = defaultRootLayout(root);
  // A missing anchor is unsafe even when only inspecting: serve never creates
  // it, so reporting "uninitialised" (run serve) would lead nowhere.
  if (lstatOrUndefined(anchor) === undefined) throw new UnsafeLocationError('the directory above the default data root does not exist');
  assertSafeAncestors(anchor);
  let current = anchor;
  for (const part of components.slice(0, -1)) {
    current = join(current, part);
    let stats = lstatOrUndefined(current);
    if (!stats) {
      if (!create) return false;
      makePrivateDirectory(current);
      stats = lstatSync(current);
    }
    if (stats.isSymbolicLink()) throw new UnsafeLocationError('a parent of the data root is a symbolic link');
    if (!stats.isDirectory()) throw new UnsafeLocationError('a parent of the data root is not a directory');
    if (uid() !== undefined && stats.uid !== uid()) throw new UnsafeLocationError('a parent of the data root is owned by another user');
    if ((stats.mode & 0o022) !== 0) throw new UnsafeLocationError('a parent of the data root is writable by group or others');
  }
  return true;
}

/**
 * Checks the data root; with `create`, makes a missing root (and, for the
 * platform default, missing directories below its anchor) with mode 0700.
 * Returns whether it exists.
 */
export function checkDataRoot(root: string, options: { create: boolean; defaultRoot: boolean }): boolean {
  checkRootText(root);
  if (options.defaultRoot) {
    if (!checkDefaultRootParents(root, options.create)) return false;
  } else {
    const parent = dirname(root);
    // As for the default root's anchor: serve never creates the parent.
    if (lstatOrUndefined(parent) === undefined) throw new UnsafeLocationError('the parent of the data root does not exist');
    assertSafeAncestors(parent);
  }
  let stats = lstatOrUndefined(root);
  if (!stats) {
    if (!options.create) return false;
    makePrivateDirectory(root);
    stats = lstatSync(root);
  }
  assertPrivateDirectory(root, stats);
  assertLocalFilesystem(root);
  return true;
}

/** mkdir 0700; a directory a concurrent starter made first is checked like any other. */
function makePrivateDirectory(path: string): void {
  try {
    mkdirSync(path, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return;
  }
  // The umask narrows mkdir's mode (umask 0277 made 0500, which the policy
  // then refused on this and every later start): force 0700, as the files
  // are forced to 0600. Its parent is private, so nobody else can swap it.
  chmodSync(path, 0o700);
}

/** Checks (and with `create`, makes) a private subdirectory of a checked root. */
export function checkPrivateSubdirectory(path: string, create: boolean): boolean {
  let stats = lstatOrUndefined(path);
  if (!stats) {
    if (!create) return false;
    makePrivateDirectory(path);
    stats = lstatSync(path);
  }
  assertPrivateDirectory(path, stats);
  return true;
}

function assertPrivateFile(stats: Stats): void {
  if (stats.isSymbolicLink()) throw new UnsafeLocationError('a database file is a symbolic link');
  if (!stats.isFile()) throw new UnsafeLocationError('a database file is not a regular file');
  if (uid() !== undefined && stats.uid !== uid()) throw new UnsafeLocationError('a database file is owned by another user');
  if ((stats.mode & 0o777) !== 0o600) throw new UnsafeLocationError('a database file is not mode 0600');
  if (stats.nlink !== 1) throw new UnsafeLocationError('a database file has more than one link');
}

/** The files SQLite keeps beside a database. */
const SIDECAR_SUFFIXES = ['-wal', '-shm', '-journal'] as const;

/**
 * The journal mode the database header records (bytes 18-19: `01 01`
 * rollback, `02 02` WAL), read directly; `empty` before SQLite wrote a header.
 */
function headerJournalMode(path: string): 'empty' | 'rollback' | 'wal' | 'other' {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const bytes = Buffer.alloc(2);
    if (readSync(fd, bytes, 0, 2, 18) < 2) return 'empty';
    if (bytes[0] === 1 && bytes[1] === 1) return 'rollback';
    if (bytes[0] === 2 && bytes[1] === 2) return 'wal';
    return 'other';
  } finally {
    closeSync(fd);
  }
}

/** Whether a WAL-mode database lies closed: no `-wal`, `-shm` or `-journal` beside it. */
export function isClosedWalDatabase(path: string): boolean {
  try {
    if (SIDECAR_SUFFIXES.some((suffix) => lstatOrUndefined(path + suffix) !== undefined)) return false;
    return headerJournalMode(path) === 'wal';
  } catch {
    return false;
  }
}

/**
 * Checks a database file and its sidecars (operations spec §3.2.2); returns
 * whether the database exists. Sidecars without a database, WAL files beside
 * a rollback-mode header, or a rollback journal beside WAL artefacts are
 * unsafe: some other program has been at the files.
 */
export function checkDatabaseFile(path: string): boolean {
  // Another process switching a fresh database to WAL passes through these
  // states for the length of one transaction; only a mix that persists is
  // some other program's doing.
  for (let attempt = 0; ; attempt++) {
    const stats = lstatOrUndefined(path);
    const present = new Set<string>();
    for (const suffix of SIDECAR_SUFFIXES) {
      const sidecar = lstatOrUndefined(path + suffix);
      if (!sidecar) continue;
      if (stats) assertPrivateFile(sidecar);
      present.add(suffix);
    }
    let mixed: string | null;
    if (!stats) {
      if (present.size === 0) return false;
      // The database may have been created (with its journal) since it was looked for.
      mixed = 'a database sidecar exists without its database';
    } else {
      assertPrivateFile(stats);
      mixed = present.size > 0 ? sidecarMix(path, present) : null;
    }
    if (mixed === null) return true;
    if (attempt >= SIDECAR_SETTLE_ATTEMPTS) throw new UnsafeLocationError(mixed);
    sleepSync(SIDECAR_SETTLE_PAUSE_MS);
  }
}

/**
 * checkDatabaseFile() for a database this process has open: ownership, mode
 * and links of the file and its sidecars, by lstat alone. It never opens the
 * file to read its header: closing any descriptor on a file drops every
 * POSIX lock the process holds on it, SQLite's SHARED lock among them, and
 * without that lock an older SQLite (3.40, say: the sqlite3 shell or
 * Python's module) closing its own connection finds itself the last user,
 * checkpoints and deletes the -wal from under ours. The open connection
 * reports its journal mode itself.
 */
export function checkOpenDatabaseFile(path: string): void {
  const stats = lstatOrUndefined(path);
  if (!stats) throw new UnsafeLocationError('a database file was removed or replaced while in use');
  assertPrivateFile(stats);
  for (const suffix of SIDECAR_SUFFIXES) {
    const sidecar = lstatOrUndefined(path + suffix);
    if (sidecar) assertPrivateFile(sidecar);
  }
}

const SIDECAR_SETTLE_ATTEMPTS = 25;
const SIDECAR_SETTLE_PAUSE_MS = 20;

/** SQLite's rollback-journal header magic (bytes 0-7 of a hot journal). */
const JOURNAL_MAGIC = Buffer.from([0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7]);

/** The page size a database header records (bytes 16-17; 1 stands for 65536), or 0 without a header. */
function headerPageSize(path: string): number {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const bytes = Buffer.alloc(2);
    if (readSync(fd, bytes, 0, 2, 16) < 2) return 0;
    const size = bytes.readUInt16BE(0);
    return size === 1 ? 65536 : size;
  } finally {
    closeSync(fd);
  }
}

/**
 * Whether a rollback journal is the hot journal SQLite leaves when a process
 * dies while switching a new, empty database to WAL (D26): valid magic, an
 * original size of zero pages (bytes 16-19), the database's own page size
 * (bytes 24-27), and a database of at most the one page the switch wrote.
 * SQLite truncates the database to the journal's original size on the next
 * open, whatever its length, so the size is the database header's, never
 * the journal's claim: a foreign journal claiming 64 KiB pages beside a
 * small store with content is not ours and stays unsafe.
 */
function journalOfEmptyDatabase(journal: string, database: string): boolean {
  let fd: number;
  try {
    fd = openSync(journal, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    // Gone since it was listed: a live switch to WAL ended; checkDatabaseFile looks again.
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
  try {
    const header = Buffer.alloc(28);
    if (readSync(fd, header, 0, 28, 0) < 28) return false;
    if (!header.subarray(0, 8).equals(JOURNAL_MAGIC) || header.readUInt32BE(16) !== 0) return false;
    const pageSize = headerPageSize(database);
    return pageSize >= 512 && pageSize <= 65536 && header.readUInt32BE(24) === pageSize && lstatSync(database).size <= pageSize;
  } finally {
    closeSync(fd);
  }
}

/** What is wrong with the sidecars beside the header's journal mode, or null. */
function sidecarMix(path: string, present: ReadonlySet<string>): string | null {
  const mode = headerJournalMode(path);
  const walArtefacts = present.has('-wal') || present.has('-shm');
  if (walArtefacts && mode === 'rollback') return 'WAL files lie beside a rollback-journal database';
  // A database without a header (or with a foreign one) has no WAL of its
  // own yet: SQLite writes the header before it makes the -wal and -shm, so
  // these came from elsewhere, and opening would adopt or overwrite them.
  if (walArtefacts && mode !== 'wal') return 'WAL files lie beside a database that is not in WAL mode';
  if (present.has('-journal') && (walArtefacts || mode === 'wal')) {
    // A kill -9 between SQLite writing the WAL header of a fresh database and
    // unlinking its journal leaves exactly this; SQLite rolls it back to empty.
    if (!walArtefacts && journalOfEmptyDatabase(path + '-journal', path)) return null;
    return 'a rollback journal lies beside WAL files';
  }
  return null;
}

/** Creates an empty database file exclusively, without following symlinks, mode 0600. */
export function createDatabaseFile(path: string): void {
  const fd = openSync(path, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY | constants.O_NOFOLLOW, 0o600);
  try {
    fchmodSync(fd, 0o600); // whatever the umask took away
    assertPrivateFile(fstatSync(fd));
  } finally {
    closeSync(fd);
  }
}
