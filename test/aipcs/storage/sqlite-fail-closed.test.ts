// `aipcs serve --profile sqlite` fails closed: an unsafe location (modes,
// ownership, symlinks, stray sidecars), a registry that is not ours, or a
// registry held busy past the timeout stops start-up with the single
// internal_error envelope and exit 2, before any MCP traffic.

import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, closeSync, linkSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { aipcsBin } from '../../support/bins.js';
import { sqliteArgs } from '../../support/aipcs-client.js';
import { foreignRollbackDatabase } from '../../support/sqlite.js';

const INIT = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n';

function serve(dataRoot: string, extra: string[] = []) {
  const run = spawnSync(process.execPath, [aipcsBin(), 'serve', ...sqliteArgs(dataRoot), ...extra], { input: INIT, encoding: 'utf8', timeout: 30_000 });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

function expectRefused(result: ReturnType<typeof serve>, dataRoot: string): void {
  expect(result.status).toBe(2);
  expect(result.stdout).toBe('');
  expect(JSON.parse(result.stderr.trim())).toEqual({ ok: false, result: null, error: { code: 'internal_error', message: 'Server could not be started safely.', issues: [], retryable: false } });
  expect(result.stderr).not.toContain(dataRoot);
}

const base = () => mkdtempSync(join(tmpdir(), 'aipcs-unsafe-'));

describe('sqlite start-up', () => {
  it('creates a private root and registry when all is well', () => {
    const dataRoot = join(base(), 'data');
    const result = serve(dataRoot);
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('"serverInfo"');
    expect(statSync(dataRoot).mode & 0o777).toBe(0o700);
    expect(statSync(join(dataRoot, 'registry.sqlite')).mode & 0o777).toBe(0o600);
  });

  it('refuses a root that is not mode 0700', () => {
    const dataRoot = join(base(), 'data');
    mkdirSync(dataRoot, { mode: 0o755 });
    chmodSync(dataRoot, 0o755);
    expectRefused(serve(dataRoot), dataRoot);
  });

  it('refuses a parent writable by others, and a missing parent', () => {
    const parent = base();
    chmodSync(parent, 0o777);
    expectRefused(serve(join(parent, 'data')), parent);
    const missing = join(base(), 'absent', 'data');
    expectRefused(serve(missing), missing);
  });

  it('refuses a root reached through a symlink', () => {
    const parent = base();
    const real = join(parent, 'real');
    mkdirSync(real, { mode: 0o700 });
    const link = join(parent, 'link');
    symlinkSync(real, link);
    expectRefused(serve(link), link);
    expectRefused(serve(join(link, 'data')), link);
  });

  it('refuses a registry file with a loose mode, and a sidecar without its database', () => {
    const dataRoot = join(base(), 'data');
    expect(serve(dataRoot).status).toBe(0);
    chmodSync(join(dataRoot, 'registry.sqlite'), 0o644);
    expectRefused(serve(dataRoot), dataRoot);

    const other = join(base(), 'data');
    mkdirSync(other, { mode: 0o700 });
    writeFileSync(join(other, 'registry.sqlite-wal'), '', { mode: 0o600 });
    expectRefused(serve(other), other);
  });

  it('refuses a registry file with a second hard link (another path could write it)', () => {
    const dataRoot = join(base(), 'data');
    expect(serve(dataRoot).status).toBe(0);
    linkSync(join(dataRoot, 'registry.sqlite'), join(base(), 'elsewhere.sqlite'));
    expectRefused(serve(dataRoot), dataRoot);
  });

  // Only root can hand a file to another user; root also opens it, so the owner check is all that refuses it.
  it.skipIf(process.getuid?.() !== 0)('refuses a registry file owned by another user', () => {
    const dataRoot = join(base(), 'data');
    expect(serve(dataRoot).status).toBe(0);
    chownSync(join(dataRoot, 'registry.sqlite'), 12345, 12345);
    expectRefused(serve(dataRoot), dataRoot);
  });

  it('refuses a root written with . or .. components or a // prefix, even when it names a safe directory', () => {
    const parent = base();
    const dataRoot = join(parent, 'data');
    expect(serve(dataRoot).status).toBe(0);
    for (const spelled of [`${parent}/../${parent.split('/').at(-1) ?? ''}/data`, `${parent}/./data`, `/${dataRoot}`]) {
      expectRefused(serve(spelled), parent);
      const status = spawnSync(process.execPath, [aipcsBin(), 'status', ...sqliteArgs(spelled)], { encoding: 'utf8' });
      expect([status.status, (JSON.parse(status.stderr.trim()) as { error: { code: string } }).error.code]).toEqual([6, 'storage_unavailable']);
    }
  });

  it('refuses WAL files beside a rollback-mode registry, and a rollback journal beside WAL files', () => {
    const dataRoot = join(base(), 'data');
    expect(serve(dataRoot).status).toBe(0);
    const registry = join(dataRoot, 'registry.sqlite');
    writeFileSync(`${registry}-journal`, '', { mode: 0o600 });
    writeFileSync(`${registry}-wal`, '', { mode: 0o600 });
    expectRefused(serve(dataRoot), dataRoot);

    const other = join(base(), 'data');
    mkdirSync(other, { mode: 0o700 });
    const rollback = new Database(join(other, 'registry.sqlite'));
    rollback.exec('CREATE TABLE t (x)');
    rollback.close();
    chmodSync(join(other, 'registry.sqlite'), 0o600);
    writeFileSync(join(other, 'registry.sqlite-shm'), '', { mode: 0o600 });
    expectRefused(serve(other), other);
  });

  it('refuses a registry of ours whose meta names a revision this release does not know (a newer one), and leaves it untouched', () => {
    const dataRoot = join(base(), 'data');
    expect(serve(dataRoot).status).toBe(0);
    const registry = join(dataRoot, 'registry.sqlite');
    const db = new Database(registry);
    db.exec('UPDATE aipcs_registry_meta SET applied_revision = 7');
    db.close();
    expectRefused(serve(dataRoot), dataRoot);
    const after = new Database(registry, { readonly: true });
    expect(after.prepare('SELECT applied_revision FROM aipcs_registry_meta').pluck().get()).toBe(7);
    after.close();
  });

  it('refuses a registry that is some other SQLite database', () => {
    const dataRoot = join(base(), 'data');
    mkdirSync(dataRoot, { mode: 0o700 });
    foreignRollbackDatabase(join(dataRoot, 'registry.sqlite'));
    expectRefused(serve(dataRoot), dataRoot);
  });

  it('refuses a registry holding a trigger whose name starts with "sqlite" but not SQLite\'s own "sqlite_"', () => {
    const dataRoot = join(base(), 'data');
    mkdirSync(dataRoot, { mode: 0o700 });
    expect(serve(dataRoot).status).toBe(0);
    const db = new Database(join(dataRoot, 'registry.sqlite'));
    const table = (db.prepare(`SELECT name FROM sqlite_schema WHERE type = 'table' AND substr(name, 1, 7) <> 'sqlite_' ORDER BY name LIMIT 1`).get() as { name: string }).name;
    db.exec(`CREATE TRIGGER "sqliteevil" AFTER INSERT ON "${table}" BEGIN SELECT 1; END`);
    db.close();
    expectRefused(serve(dataRoot), dataRoot);
  });

  it('leaves a registry that is some other rollback-journal database untouched (not switched to WAL)', () => {
    const dataRoot = join(base(), 'data');
    mkdirSync(dataRoot, { mode: 0o700 });
    const path = join(dataRoot, 'registry.sqlite');
    const before = foreignRollbackDatabase(path);
    expect(before.subarray(18, 20)).toEqual(Buffer.from([1, 1]));
    expectRefused(serve(dataRoot), dataRoot);
    expect(readFileSync(path).equals(before)).toBe(true);
    expect(readdirSync(dataRoot)).toEqual(['registry.sqlite']);
  });

  it('refuses a registry with a damaged page that its own tables do not reach at start-up', () => {
    const dataRoot = join(base(), 'data');
    expect(serve(dataRoot).status).toBe(0);
    const path = join(dataRoot, 'registry.sqlite');
    const pages = statSync(path).size / 4096;
    expect(pages).toBeGreaterThan(4);
    const fd = openSync(path, 'r+');
    writeSync(fd, Buffer.alloc(4096, 0x5a), 0, 4096, Math.floor(pages / 2) * 4096);
    closeSync(fd);
    expectRefused(serve(dataRoot), dataRoot);
    // Read-only inspection fails closed on it as well (ops spec §3.2.5): reported, never ready.
    const admin = (...command: string[]) => {
      const run = spawnSync(process.execPath, [aipcsBin(), ...command, ...sqliteArgs(dataRoot)], { encoding: 'utf8', timeout: 30_000 });
      expect(run.status).toBe(0);
      return (JSON.parse(run.stdout) as { result: Record<string, unknown> }).result;
    };
    const unavailable = { component: 'registry', backend: 'sqlite', status: 'unavailable', applied_revision: null, target_revision: null, issue_code: 'storage_unavailable' };
    expect(admin('storage', 'status')).toEqual(unavailable);
    expect(admin('status')['registry']).toEqual(unavailable);
    const doctor = admin('doctor');
    expect(doctor['overall']).toBe('fail');
    expect((doctor['checks'] as { check_id: string }[]).find((check) => check.check_id === 'registry_migration')).toEqual({ check_id: 'registry_migration', status: 'fail', issue_code: 'storage_unavailable' });
  });

  it('refuses a registry held busy beyond the busy timeout', () => {
    const dataRoot = join(base(), 'data');
    expect(serve(dataRoot).status).toBe(0);
    const holder = new Database(join(dataRoot, 'registry.sqlite'));
    holder.exec('BEGIN EXCLUSIVE');
    try {
      expectRefused(serve(dataRoot, ['--sqlite-busy-timeout-ms', '50']), dataRoot);
    } finally {
      holder.exec('ROLLBACK');
      holder.close();
    }
    expect(serve(dataRoot).status).toBe(0);
  });
});

describe('sqlite start-up on the platform-default root', () => {
  // No --sqlite-data-root: the root is $HOME/.local/share/aipcs or $XDG_DATA_HOME/aipcs (Linux).
  function serveDefault(env: Record<string, string>) {
    const run = spawnSync(process.execPath, [aipcsBin(), 'serve', '--profile', 'sqlite', '--principal-id', 'local-agent'], {
      input: INIT,
      encoding: 'utf8',
      timeout: 30_000,
      env: { PATH: process.env['PATH'] ?? '', ...env },
    });
    return { status: run.status, stdout: run.stdout, stderr: run.stderr };
  }
  function adminStatus(env: Record<string, string>) {
    const run = spawnSync(process.execPath, [aipcsBin(), 'status', '--profile', 'sqlite', '--principal-id', 'local-agent'], {
      encoding: 'utf8',
      env: { PATH: process.env['PATH'] ?? '', ...env },
    });
    return { status: run.status, stdout: run.stdout, stderr: run.stderr };
  }

  it.skipIf(process.platform !== 'linux')('creates the missing directories below HOME with mode 0700', () => {
    const home = base();
    chmodSync(home, 0o700);
    expect(serveDefault({ HOME: home }).status).toBe(0);
    for (const dir of ['.local', '.local/share', '.local/share/aipcs']) expect(statSync(join(home, dir)).mode & 0o777).toBe(0o700);
  });

  it.skipIf(process.platform !== 'linux')('refuses a HOME or walked directory writable by group or others (spec §3.2.2: anchor and each walked component)', () => {
    const home = base();
    chmodSync(home, 0o775);
    expectRefused(serveDefault({ HOME: home }), home);
    expect(() => statSync(join(home, '.local'))).toThrow();
    // Administration reports it as the registry's state (ops spec §1.8) and creates nothing either.
    const admin = adminStatus({ HOME: home });
    expect(admin.status).toBe(0);
    expect((JSON.parse(admin.stdout) as { result: { registry: { status: string; issue_code: string } } }).result.registry).toMatchObject({ status: 'unavailable', issue_code: 'storage_unavailable' });
    expect(() => statSync(join(home, '.local'))).toThrow();

    const other = base();
    chmodSync(other, 0o700);
    mkdirSync(join(other, '.local'), { mode: 0o777 });
    chmodSync(join(other, '.local'), 0o777);
    expectRefused(serveDefault({ HOME: other }), other);
    expect(() => statSync(join(other, '.local', 'share'))).toThrow();
  });

  it.skipIf(process.platform !== 'linux')('never creates a missing XDG_DATA_HOME, only the aipcs leaf inside an existing one', () => {
    const parent = base();
    chmodSync(parent, 0o700);
    const xdg = join(parent, 'xdg');
    expectRefused(serveDefault({ HOME: parent, XDG_DATA_HOME: xdg }), xdg);
    expect(() => statSync(xdg)).toThrow();
    mkdirSync(xdg, { mode: 0o700 });
    expect(serveDefault({ HOME: parent, XDG_DATA_HOME: xdg }).status).toBe(0);
    expect(statSync(join(xdg, 'aipcs')).mode & 0o777).toBe(0o700);
  });
});
