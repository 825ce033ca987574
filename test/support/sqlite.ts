// SQLite test fixtures shared by the connection and location tests.

import { chmodSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { StorageFailure } from '../../src/aipcs/core/ports.js';

/** A fresh private folder (0700) to put a data root in. */
export function privateFolder(): string {
  const folder = mkdtempSync(join(tmpdir(), 'aipcs-location-'));
  chmodSync(folder, 0o700);
  return folder;
}

/** A fresh WAL database with one table `t (v INTEGER)`, in its own temp folder. */
export function walDatabase(prefix = 'aipcs-sqlite-'): string {
  const path = join(mkdtempSync(join(tmpdir(), prefix)), 'store.sqlite');
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE t (v INTEGER)');
  db.close();
  return path;
}

/**
 * Writes, at `path`, some other application's SQLite database (one table
 * `something_else`, rollback journal, mode 0600) and returns its bytes, so
 * that a test can show the file was left exactly as it was.
 */
export function foreignRollbackDatabase(path: string): Buffer {
  const db = new Database(path);
  db.exec('CREATE TABLE something_else (x INTEGER)');
  db.close();
  chmodSync(path, 0o600);
  return readFileSync(path);
}

/** The StorageFailure kind `promise` rejects with, or `succeeded` when it resolves; other errors propagate. */
export async function storageOutcome(promise: Promise<unknown>, succeeded = 'none'): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof StorageFailure) return error.kind;
    throw error;
  }
  return succeeded;
}
