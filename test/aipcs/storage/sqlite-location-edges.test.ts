// The SQLite location policy (location.ts, operations spec §3.2.2) at the
// edges earlier tests left open: others-writable parents, symbolic links on
// the platform-default root's walk, every walked directory (not only the
// first), and a file-system error that is not "missing". Written in mutation
// review BH: each of these survived loosening or removing its check.

import { chmodSync, mkdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkDatabaseFile, checkDataRoot, checkRootText, createDatabaseFile } from '../../../src/aipcs/storage/sqlite/location.js';
import { privateFolder } from '../../support/sqlite.js';

const explicitRoot = { create: false, defaultRoot: false };
const createDefault = { create: true, defaultRoot: true };

describe('the textual rules of a data root', () => {
  // Such a root is not absolute either; the refusal still names the rule it breaks.
  it('refuse a file: URI in the words of the prefix rule', () => {
    expect(() => checkRootText('file:/srv/aipcs')).toThrow(/the data root has a forbidden prefix/);
  });
});

describe('a configured data root on disk', () => {
  it('is refused, as a symbolic link, when it is one, even to a private directory', () => {
    const folder = privateFolder();
    mkdirSync(join(folder, 'real'), { mode: 0o700 });
    symlinkSync(join(folder, 'real'), join(folder, 'data'));
    expect(() => checkDataRoot(join(folder, 'data'), explicitRoot)).toThrow(/a storage directory is a symbolic link/);
  });

  it('is refused when its parent is writable by others (not only by its group)', () => {
    const folder = privateFolder();
    const root = join(folder, 'data');
    mkdirSync(root, { mode: 0o700 });
    chmodSync(folder, 0o703);
    expect(() => checkDataRoot(root, explicitRoot)).toThrow(/the parent of the data root is writable by group or others/);
  });
});

describe('the platform-default data root', () => {
  it('is refused when a directory above its anchor is a symbolic link', () => {
    const folder = privateFolder();
    mkdirSync(join(folder, 'real', 'home'), { recursive: true, mode: 0o700 });
    symlinkSync(join(folder, 'real'), join(folder, 'link'));
    const root = join(folder, 'link', 'home', '.local', 'share', 'aipcs');
    expect(() => checkDataRoot(root, createDefault)).toThrow(/a parent of the data root is a symbolic link/);
  });

  it('is refused when a walked directory is a symbolic link, even to a private directory', () => {
    const anchor = privateFolder();
    mkdirSync(join(anchor, 'elsewhere'), { mode: 0o700 });
    symlinkSync(join(anchor, 'elsewhere'), join(anchor, '.local'));
    expect(() => checkDataRoot(join(anchor, '.local', 'share', 'aipcs'), createDefault)).toThrow(/a parent of the data root is a symbolic link/);
  });

  it('is refused when a walked directory is writable by others', () => {
    const anchor = privateFolder();
    mkdirSync(join(anchor, '.local'), { mode: 0o700 });
    chmodSync(join(anchor, '.local'), 0o703);
    expect(() => checkDataRoot(join(anchor, '.local', 'share', 'aipcs'), createDefault)).toThrow(/a parent of the data root is writable by group or others/);
  });

  it('checks the last walked directory too, not only the first', () => {
    const anchor = privateFolder();
    mkdirSync(join(anchor, '.local', 'share'), { recursive: true, mode: 0o700 });
    chmodSync(join(anchor, '.local', 'share'), 0o770);
    expect(() => checkDataRoot(join(anchor, '.local', 'share', 'aipcs'), createDefault)).toThrow(/a parent of the data root is writable by group or others/);
  });
});

describe('a database file', () => {
  it('is refused, as a symbolic link, when it is one, even to a private file', () => {
    const folder = privateFolder();
    writeFileSync(join(folder, 'real.sqlite'), '', { mode: 0o600 });
    symlinkSync(join(folder, 'real.sqlite'), join(folder, 'registry.sqlite'));
    expect(() => checkDatabaseFile(join(folder, 'registry.sqlite'))).toThrow(/a database file is a symbolic link/);
  });

  // ENOTDIR is not "missing": reading it as missing would have a store created.
  it('whose folder is a regular file is an error, not a missing database', () => {
    const folder = privateFolder();
    writeFileSync(join(folder, 'service-stores'), '', { mode: 0o600 });
    expect(() => checkDatabaseFile(join(folder, 'service-stores', 'svc_0.sqlite'))).toThrow(expect.objectContaining({ code: 'ENOTDIR' }));
  });

  // Exclusive: a file someone else put at the path is neither opened nor re-moded.
  it('is never created over an existing file, whose mode stays as it was', () => {
    const path = join(privateFolder(), 'registry.sqlite');
    writeFileSync(path, 'theirs', { mode: 0o644 });
    chmodSync(path, 0o644);
    expect(() => createDatabaseFile(path)).toThrow(expect.objectContaining({ code: 'EEXIST' }));
    expect(statSync(path).mode & 0o777).toBe(0o644);
  });
});
