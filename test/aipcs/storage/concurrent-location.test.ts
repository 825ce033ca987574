// Several processes starting on a fresh data root race through the location
// policy while one of them creates a database and switches it to WAL (a
// journal for the length of that transaction). Two states of that switch
// made a concurrent start-up fail (about one start in a hundred with four
// servers under load): a journal listed and gone before it could be opened
// (ENOENT escaped the check), and a journal seen before its database
// (refused at once as an orphan sidecar). Both now settle like the other
// transient mixes; an orphan that stays is still refused.

import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkDatabaseFile } from '../../../src/aipcs/storage/sqlite/location.js';

const folder = (): string => mkdtempSync(join(tmpdir(), 'aipcs-location-race-'));

/** A closed WAL-mode database of one page (what a fresh switch leaves), mode 0600. */
function freshWalDatabase(path: string): void {
  closeSync(openSync(path, 'wx', 0o600));
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.close();
}

describe('the location policy during a concurrent switch to WAL', () => {
  it('refuses a journal that stays without its database', () => {
    const path = join(folder(), 'registry.sqlite');
    writeFileSync(`${path}-journal`, Buffer.alloc(512), { mode: 0o600 });
    expect(() => checkDatabaseFile(path)).toThrow(/a database sidecar exists without its database/);
  });

  it('accepts a database whose journal was seen before it, once the other process finished', async () => {
    const root = folder();
    const path = join(root, 'registry.sqlite');
    const prepared = join(folder(), 'prepared.sqlite');
    freshWalDatabase(prepared);
    writeFileSync(`${path}-journal`, Buffer.alloc(512), { mode: 0o600 });
    // The other process: the database appears and its journal goes 0.1 s after the check began.
    const other = spawn('sh', ['-c', 'sleep 0.1; mv "$1" "$2"; rm "$2-journal"', 'sh', prepared, path], { stdio: 'ignore' });
    const exited = new Promise((resolve) => other.on('exit', resolve));
    expect(checkDatabaseFile(path)).toBe(true);
    await exited;
    expect(existsSync(`${path}-journal`)).toBe(false);
  });
});
