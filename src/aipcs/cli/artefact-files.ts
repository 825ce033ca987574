// The files of export and import (operations spec §1.9.4-1.9.5, §5.9): an
// export goes to an exclusive 0600 temp file and is published by hard link,
// never overwriting; an import is read no-follow from a regular file and
// spooled privately so staging re-reads what was validated. No path is printed.

import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, constants, fchmodSync, fstatSync, fsyncSync, linkSync, lstatSync, mkdtempSync, openSync, readdirSync, readSync, rmSync, unlinkSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { folderSyncUnsupported } from '../../common/folder-sync.js';
import { holdSignals, removeOnInterrupt } from '../../common/interrupt-cleanup.js';
import { OWNER_TAG_PATTERN, ownerTag, ownerTagGone } from '../../common/process.js';
import { fileSystemPath } from '../../common/raw-arguments.js';
import { refusal } from './admin-errors.js';
import type { CliIssue } from './error-document.js';

const errno = (error: unknown): string | undefined => (error as NodeJS.ErrnoException | null)?.code;

// A file of the operator's that cannot be used is storage_unavailable (ops
// spec §1.9.4-1.9.5, §9.10), whose message alone ("Storage is unavailable.")
// sent the operator to the database for a mistyped --input or a missing
// --output folder. The issue names the flag (never the path, §2.9).
export const INPUT_UNAVAILABLE: readonly CliIssue[] = [
  {
    code: 'input_unavailable',
    path: '--input',
    message: 'The input file cannot be opened or read: it is missing, not readable, or its file system failed.',
    remediation: 'Check that --input names an existing, readable file written by aipcs export.',
  },
];
const OUTPUT_UNAVAILABLE: readonly CliIssue[] = [
  {
    code: 'output_unavailable',
    path: '--output',
    message: 'The output file cannot be created or written: its folder is missing or not writable, or its file system failed, is full or has no hard links.',
    remediation: 'Name a new file in an existing, writable folder with room for the artifact, on a file system with hard links.',
  },
];
// The import's private copy (§5.9) goes to the temporary folder, not to the
// data root: when that folder is full or unwritable, storage is fine.
const SPOOL_UNAVAILABLE: readonly CliIssue[] = [
  {
    code: 'spool_unavailable',
    path: 'TMPDIR',
    message: "The import's private copy of the artifact cannot be written in the temporary folder: it is full, missing or not writable.",
    remediation: 'Free room for the artifact in the temporary folder, or point TMPDIR at a writable folder with room for it.',
  },
];
const OUTPUT_EXISTS: readonly CliIssue[] = [
  { code: 'path_exists', path: '--output', message: 'The output path already exists.', remediation: 'Choose a new path; existing files are never overwritten.' },
];

/** Refuses an existing destination of any type (a dangling symlink too) before any registry work. */
export function requireAbsent(path: string): void {
  try {
    lstatSync(fileSystemPath(path));
  } catch (error) {
    if (errno(error) === 'ENOENT') return;
    throw refusal('storage_unavailable', OUTPUT_UNAVAILABLE, error);
  }
  throw refusal('already_exists', OUTPUT_EXISTS);
}

function writeAll(fd: number, chunk: Uint8Array): void {
  let offset = 0;
  while (offset < chunk.length) offset += writeSync(fd, chunk, offset, chunk.length - offset);
}

/** The temp file an export is written into, published only when the export completed. */
export class ExportFile {
  private fd: number | null;
  private readonly tempPath: string | Buffer;
  private readonly finalPath: string | Buffer;
  private readonly folder: string | Buffer;
  /** The temp name is removed on Ctrl-C too (spec §1.9.4: always removed). */
  private readonly releaseOnInterrupt: () => void;

  private constructor(finalPath: string | Buffer, tempPath: string | Buffer, folder: string | Buffer, fd: number) {
    this.finalPath = finalPath;
    this.tempPath = tempPath;
    this.folder = folder;
    this.fd = fd;
    this.releaseOnInterrupt = removeOnInterrupt(tempPath);
  }

  /** Creates `.aipcs-export-<32 hex>.tmp` beside the destination: exclusive, no-follow, mode 0600. */
  static create(path: string): ExportFile {
    // Never resolve()d: a `..` must stay for the file system to read
    // (`link/..` is the link target's parent), as the existence check and
    // the reference's pathlib read it. A relative path is the kernel's to
    // resolve against the working directory (whose name need not be UTF-8;
    // a deleted one fails the open: storage_unavailable). Names holding
    // surrogate-escaped bytes go to the file system as those bytes.
    const folder = dirname(path);
    const tempPath = fileSystemPath(`${folder}/.aipcs-export-${randomBytes(16).toString('hex')}.tmp`);
    // A Ctrl-C between creating the file and registering it for removal would
    // leave it (the signal's default action): it waits until both are done.
    const releaseSignals = holdSignals();
    try {
      let fd: number;
      try {
        fd = openSync(tempPath, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY | constants.O_NOFOLLOW, 0o600);
      } catch (error) {
        throw refusal('storage_unavailable', OUTPUT_UNAVAILABLE, error);
      }
      try {
        // The umask may have narrowed or the file system widened it: force 0600.
        fchmodSync(fd, 0o600);
      } catch (error) {
        closeSync(fd);
        try {
          unlinkSync(tempPath);
        } catch {
          // The refusal below is what the operator needs; a leftover temp
          // name is never read (exclusive, random) and is safe to delete.
        }
        throw refusal('storage_unavailable', OUTPUT_UNAVAILABLE, error);
      }
      return new ExportFile(fileSystemPath(path), tempPath, fileSystemPath(folder), fd);
    } finally {
      releaseSignals();
    }
  }

  /** The codec's sink. */
  readonly write = (chunk: Uint8Array): void => {
    if (this.fd === null) throw refusal('storage_unavailable');
    try {
      writeAll(this.fd, chunk);
    } catch (error) {
      throw refusal('storage_unavailable', OUTPUT_UNAVAILABLE, error);
    }
  };

  /** fsync, hard-link to the destination (never replacing it), unlink the temp name, fsync the directory. */
  publish(): void {
    const fd = this.fd;
    if (fd === null) throw refusal('storage_unavailable');
    try {
      fsyncSync(fd);
      closeSync(fd);
      this.fd = null;
      linkSync(this.tempPath, this.finalPath);
    } catch (error) {
      if (errno(error) === 'EEXIST') throw refusal('already_exists', OUTPUT_EXISTS, error);
      throw refusal('storage_unavailable', OUTPUT_UNAVAILABLE, error);
    }
    try {
      unlinkSync(this.tempPath);
      const directory = openSync(this.folder, constants.O_RDONLY);
      try {
        fsyncSync(directory);
      } catch (error) {
        if (!folderSyncUnsupported(error)) throw error;
      } finally {
        closeSync(directory);
      }
    } catch (error) {
      // The artefact is in place but its durability is not confirmed.
      throw refusal('operation_uncertain', [], error);
    }
  }

  /** Always called last: closes and removes the temp name (the published link stays). */
  dispose(): void {
    if (this.fd !== null) {
      try {
        closeSync(this.fd);
      } catch {
        // Already unusable; the unlink below is what matters.
      }
      this.fd = null;
    }
    try {
      unlinkSync(this.tempPath);
    } catch {
      // Gone already (published), or never there.
    }
    this.releaseOnInterrupt();
  }
}

const CHUNK = 1024 * 1024;

/**
 * Opens the artefact read-only, without following a final symlink and
 * without blocking on a FIFO; it must be a regular file. A symlink or a
 * non-regular file is invalid input (validation_failed); a missing file and
 * anything else that stops reading is storage_unavailable (ops spec §1.9.5).
 */
export function openArtefact(path: string): number {
  let fd: number;
  try {
    fd = openSync(fileSystemPath(path), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = errno(error);
    if (code === 'ELOOP' || code === 'EMLINK') throw refusal('validation_failed', [inputIssue('The input path is a symbolic link.')], error);
    throw refusal('storage_unavailable', INPUT_UNAVAILABLE, error);
  }
  let regular = false;
  try {
    regular = fstatSync(fd).isFile();
  } catch (error) {
    closeSync(fd);
    throw refusal('storage_unavailable', INPUT_UNAVAILABLE, error);
  }
  if (!regular) {
    closeSync(fd);
    throw refusal('validation_failed', [inputIssue('The input is not a regular file.')]);
  }
  return fd;
}

function inputIssue(message: string): { code: string; path: string; message: string; remediation: string } {
  return { code: 'invalid_input_file', path: '--input', message, remediation: 'Name a regular file written by aipcs export.' };
}

/** The bytes of an open file from its start, in chunks; read errors are storage_unavailable (with `issues` when it is the operator's file). */
export async function* fileChunks(fd: number, tee?: (chunk: Uint8Array) => void, issues: readonly CliIssue[] = []): AsyncGenerator<Uint8Array> {
  let position = 0;
  for (;;) {
    const buffer = Buffer.allocUnsafe(CHUNK);
    let read: number;
    try {
      read = readSync(fd, buffer, 0, CHUNK, position);
    } catch (error) {
      throw refusal('storage_unavailable', issues, error);
    }
    if (read === 0) return;
    position += read;
    const chunk = buffer.subarray(0, read);
    tee?.(chunk);
    yield chunk;
    // A turn of the event loop per chunk, so that a signal (Ctrl-C) is
    // handled while a long artefact is read and checked synchronously.
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/**
 * A private copy of the artefact (directory `aipcs-bundle-*` 0700, file
 * `bundle.jsonl` 0600): the first pass reads the input and copies it, every
 * later pass reads the copy, so what is staged is what was validated.
 */
/** Told when a pass over the artefact starts (1, 2, …) and of every chunk it reads. */
export interface SpoolObserver {
  pass(pass: number): void;
  chunk(bytes: number): void;
}

/** `aipcs-bundle-{owner tag}-{6 random}`: the spool of the import run by the process the tag names (`{pid}.{PID namespace}`, or `{pid}`). */
const SPOOL_NAME = new RegExp(`^aipcs-bundle-${OWNER_TAG_PATTERN}-[A-Za-z0-9]{6}$`);

/**
 * Removes the spools of imports that were killed (kill -9, a crash), which
 * nothing else would ever remove: each holds a whole artefact (up to
 * 256 MiB). Only a directory of ours whose pid is gone from this host and
 * that is over a minute old goes (not a symlink; another user's or a live
 * import's stays). Best effort.
 */
function removeDeadImportSpools(parent: string): void {
  try {
    for (const name of readdirSync(parent)) {
      const match = SPOOL_NAME.exec(name);
      if (match === null || !ownerTagGone(match[1] ?? '', match[2])) continue;
      const path = join(parent, name);
      const seen = lstatSync(path);
      if (seen.isDirectory() && seen.uid === process.getuid?.() && seen.mtimeMs < Date.now() - 60_000) rmSync(path, { recursive: true, force: true });
    }
  } catch {
    // Left for the next import.
  }
}

/**
 * Where spools may go, in order: `TMPDIR` (Node's tmpdir()), then the usual
 * system folders. A TMPDIR that names a missing or unwritable folder (left
 * over from a session that is gone) made every import `storage_unavailable`
 * although storage was fine; Python's tempfile, which the reference spools
 * with, moves on to /tmp then, and so does this.
 */
function spoolParents(): string[] {
  return [...new Set([tmpdir(), '/tmp', '/var/tmp'])];
}

/** A fresh `aipcs-bundle-{pid}-*` folder (0700) in the first usable parent. */
function makeSpoolDirectory(): string {
  let failure: unknown;
  for (const parent of spoolParents()) {
    removeDeadImportSpools(parent);
    try {
      const directory = mkdtempSync(join(parent, `aipcs-bundle-${ownerTag()}-`));
      try {
        // mkdtemp's 0700 loses what the umask takes (0500 under umask 0277, where the copy cannot be written): §5.9 says 0700.
        chmodSync(directory, 0o700);
      } catch (error) {
        rmSync(directory, { recursive: true, force: true });
        throw error;
      }
      return directory;
    } catch (error) {
      failure ??= error;
    }
  }
  throw refusal('storage_unavailable', SPOOL_UNAVAILABLE, failure);
}

export class ArtefactSpool {
  private readonly directory: string;
  private readonly file: string;
  private writer: number | null;
  private passes = 0;
  /** The spool is removed on Ctrl-C too (spec §5.9: removed afterwards). */
  private readonly releaseOnInterrupt: () => void;

  constructor(
    private readonly input: number,
    private readonly observer: SpoolObserver | null = null,
  ) {
    // A Ctrl-C between creating the folder and registering it for removal
    // would leave it (the signal's default action): it waits until both are done.
    const releaseSignals = holdSignals();
    try {
      this.directory = makeSpoolDirectory();
      this.releaseOnInterrupt = removeOnInterrupt(this.directory);
    } finally {
      releaseSignals();
    }
    this.file = join(this.directory, 'bundle.jsonl');
    try {
      const writer = openSync(this.file, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY | constants.O_NOFOLLOW, 0o600);
      try {
        fchmodSync(writer, 0o600); // §5.9's mode whatever the umask took away
      } catch (error) {
        closeSync(writer);
        throw error;
      }
      this.writer = writer;
    } catch (error) {
      rmSync(this.directory, { recursive: true, force: true });
      this.releaseOnInterrupt();
      throw refusal('storage_unavailable', SPOOL_UNAVAILABLE, error);
    }
  }

  /** What the codec calls for each pass over the artefact. */
  readonly open = (): AsyncIterable<Uint8Array> => {
    this.passes++;
    const observer = this.observer;
    observer?.pass(this.passes);
    if (this.passes === 1) {
      const writer = this.writer;
      return fileChunks(
        this.input,
        (chunk) => {
          observer?.chunk(chunk.length);
          if (writer === null) return;
          try {
            writeAll(writer, chunk);
          } catch (error) {
            throw refusal('storage_unavailable', SPOOL_UNAVAILABLE, error);
          }
        },
        INPUT_UNAVAILABLE,
      );
    }
    if (this.writer !== null) {
      closeSync(this.writer);
      this.writer = null;
    }
    // The copy failing now (descriptors exhausted, the folder emptied) is the
    // temporary folder's failure, as when it was written: not an internal error.
    let reader: number;
    try {
      reader = openSync(this.file, constants.O_RDONLY | constants.O_NOFOLLOW);
    } catch (error) {
      throw refusal('storage_unavailable', SPOOL_UNAVAILABLE, error);
    }
    return (async function* () {
      try {
        yield* fileChunks(reader, observer ? (chunk) => observer.chunk(chunk.length) : undefined, SPOOL_UNAVAILABLE);
      } finally {
        closeSync(reader);
      }
    })();
  };

  dispose(): void {
    if (this.writer !== null) {
      try {
        closeSync(this.writer);
      } catch {
        // Removal below is what matters.
      }
      this.writer = null;
    }
    rmSync(this.directory, { recursive: true, force: true });
    this.releaseOnInterrupt();
  }
}
