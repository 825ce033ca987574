import { describe, expect, it } from 'vitest';
import { defaultSqliteDataRoot } from '../../../src/aipcs/config/paths.js';
import { expectInvalid, ok, type Call } from './helpers.js';

const sqlite = (env: Record<string, string>, platform: NodeJS.Platform = 'linux'): Call => ({
  options: { profile: 'sqlite', principal_id: 'agent' },
  env,
  platform,
});

describe('default SQLite data root (§2.7)', () => {
  it('linux: $XDG_DATA_HOME/aipcs when XDG_DATA_HOME is present', () => {
    const config = ok(sqlite({ HOME: '/home/agent', XDG_DATA_HOME: '/xdg/data' }));
    expect(config.sqlite).toEqual({ dataRoot: '/xdg/data/aipcs', dataRootExplicit: false, busyTimeoutMs: 5000 });
    expect(config.sources.sqlite_data_root).toBe('default');
  });

  it('linux: $HOME/.local/share/aipcs otherwise', () => {
    expect(ok(sqlite({ HOME: '/home/agent' })).sqlite.dataRoot).toBe('/home/agent/.local/share/aipcs');
    expect(ok(sqlite({ HOME: '/home/agent/' })).sqlite.dataRoot).toBe('/home/agent/.local/share/aipcs');
    expect(ok(sqlite({ HOME: '/home/agent//' })).sqlite.dataRoot).toBe('/home/agent/.local/share/aipcs');
    expect(ok(sqlite({ HOME: '/' })).sqlite.dataRoot).toBe('/.local/share/aipcs');
  });

  it('linux: an empty, relative or dotted XDG_DATA_HOME fails instead of falling back to HOME (9.6)', () => {
    for (const xdg of ['', 'relative/data', '/x/../y', '/x/./y', '.', ' /xdg', '/xdg\u0000']) {
      expectInvalid(sqlite({ HOME: '/home/agent', XDG_DATA_HOME: xdg }), 'sqlite');
    }
  });

  it('linux: a missing, empty or relative HOME fails', () => {
    expectInvalid(sqlite({}), 'sqlite');
    expectInvalid(sqlite({ HOME: '' }), 'sqlite');
    expectInvalid(sqlite({ HOME: 'home' }), 'sqlite');
    expectInvalid(sqlite({ HOME: '/home/../root' }), 'sqlite');
    expectInvalid(sqlite({ HOME: `/${'h'.repeat(4096)}` }), 'sqlite');
  });

  it('darwin: $HOME/Library/Application Support/aipcs, XDG ignored', () => {
    const config = ok(sqlite({ HOME: '/Users/agent', XDG_DATA_HOME: '/xdg' }, 'darwin'));
    expect(config.sqlite.dataRoot).toBe('/Users/agent/Library/Application Support/aipcs');
    expect(config.sqlite.dataRootExplicit).toBe(false);
    expectInvalid(sqlite({ XDG_DATA_HOME: '/xdg' }, 'darwin'), 'sqlite');
  });

  it('win32: %LOCALAPPDATA%\\aipcs (resolvable, although SQLite cannot run there)', () => {
    expect(defaultSqliteDataRoot('win32', { LOCALAPPDATA: 'C:\\Users\\agent\\AppData\\Local' })).toEqual({
      ok: true,
      root: 'C:\\Users\\agent\\AppData\\Local\\aipcs',
    });
    expect(defaultSqliteDataRoot('win32', { HOME: '/home/agent' })).toEqual({ ok: false });
    expect(defaultSqliteDataRoot('win32', { LOCALAPPDATA: 'C:\\Users\\agent\\' })).toEqual({ ok: true, root: 'C:\\Users\\agent\\aipcs' });
    expect(defaultSqliteDataRoot('win32', { LOCALAPPDATA: '\\\\server\\share' })).toEqual({ ok: true, root: '\\\\server\\share\\aipcs' });
    // A server without a share names no folder.
    expect(defaultSqliteDataRoot('win32', { LOCALAPPDATA: '\\\\server' })).toEqual({ ok: false });
    // Either separator delimits a `..` or `.` component on Windows.
    expect(defaultSqliteDataRoot('win32', { LOCALAPPDATA: 'C:\\Users\\..\\agent' })).toEqual({ ok: false });
    expect(defaultSqliteDataRoot('win32', { LOCALAPPDATA: 'C:\\Users\\.\\agent' })).toEqual({ ok: false });
  });

  it('is not computed when a root is configured', () => {
    const config = ok({ options: { profile: 'sqlite', principal_id: 'agent', sqlite_data_root: '/srv/aipcs' }, env: {} });
    expect(config.sqlite).toEqual({ dataRoot: '/srv/aipcs', dataRootExplicit: true, busyTimeoutMs: 5000 });
  });

  it('is computed textually: a path that does not exist is fine', () => {
    expect(ok(sqlite({ HOME: '/nonexistent/aipcs-test-home' })).sqlite.dataRoot).toBe('/nonexistent/aipcs-test-home/.local/share/aipcs');
  });
});
