import { describe, expect, it } from 'vitest';
import { parseSqliteVersion } from '../../../src/aipcs/config/runnability.js';
import { requireRunnable, resolveConfiguration, resolveRunnableConfiguration, runnabilityFailure } from '../../../src/aipcs/config/resolve.js';
import { ok, type Call } from './helpers.js';

const sqliteOn = (platform: NodeJS.Platform, sqliteVersion: string | null): Call => ({
  options: { profile: 'sqlite', principal_id: 'agent', sqlite_data_root: platform === 'win32' ? 'C:\\aipcs' : '/srv/aipcs' },
  platform,
  sqliteVersion,
});

describe('runnability (§2.8)', () => {
  it.each<[NodeJS.Platform, string]>([
    ['linux', '3.51.3'],
    ['linux', '3.53.2'],
    ['darwin', '3.52.0'],
    ['linux', '4.0.0'],
    ['linux', '3.51.3.1'],
  ])('sqlite runs on %s with SQLite %s', (platform, version) => {
    const outcome = requireRunnable(ok(sqliteOn(platform, version)));
    expect(outcome).toEqual({
      ok: true,
      runtime: {
        transport: 'stdio',
        logLevel: 'warning',
        http: expect.any(Object),
        profile: 'sqlite',
        principalId: 'agent',
        sqlite: { dataRoot: '/srv/aipcs', dataRootExplicit: true, busyTimeoutMs: 5000 },
      },
    });
  });

  it.each<NodeJS.Platform>(['win32', 'freebsd', 'openbsd', 'aix', 'sunos', 'android'])('sqlite cannot run on %s', (platform) => {
    expect(requireRunnable(ok(sqliteOn(platform, '3.53.2')))).toEqual({
      ok: false,
      error: {
        code: 'unsupported_operation',
        message: 'SQLite storage is unavailable on this platform.',
        issues: [
          {
            code: 'sqlite_platform_unsupported',
            path: 'sqlite_platform',
            message: 'SQLite storage is supported only on Linux or macOS local POSIX filesystems.',
            remediation: 'Use the PostgreSQL profile or a supported SQLite host.',
          },
        ],
        retryable: false,
      },
    });
  });

  it.each<[string | null, string]>([
    ['3.51.2', '3.51.2'],
    ['3.50.9', '3.50.9'],
    ['3.45.1', '3.45.1'],
    ['2.99.99', '2.99.99'],
    ['3.51', 'an unrecognised version'],
    ['3.51.3-beta', 'an unrecognised version'],
    ['', 'an unrecognised version'],
    ['/usr/lib/libsqlite3.so', 'an unrecognised version'],
  ])('sqlite refuses SQLite %j and names %s', (version, shown) => {
    const outcome = requireRunnable(ok(sqliteOn('linux', version)));
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.error.code).toBe('unsupported_operation');
    expect(outcome.error.message).toBe(
      'SQLite storage requires SQLite 3.51.3 or newer because older runtimes contain the WAL-reset data-integrity defect.',
    );
    expect(outcome.error.issues).toEqual([
      {
        code: 'sqlite_runtime_unsupported',
        path: 'sqlite_runtime',
        message: `Detected SQLite ${shown}; SQLite 3.51.3 or newer is required.`,
        remediation: expect.stringContaining('PostgreSQL profile'),
      },
    ]);
  });

  it('says the SQLite driver did not load, and how to rebuild it, when there was no SQLite to ask', () => {
    const outcome = requireRunnable(ok(sqliteOn('linux', null)));
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.error).toEqual({
      code: 'unsupported_operation',
      message: 'SQLite storage requires SQLite 3.51.3 or newer because older runtimes contain the WAL-reset data-integrity defect.',
      issues: [
        {
          code: 'sqlite_runtime_unsupported',
          path: 'sqlite_runtime',
          message: 'Detected no SQLite: the better-sqlite3 native module did not load; SQLite 3.51.3 or newer is required.',
          remediation:
            'Rebuild it for this Node.js (`npm rebuild better-sqlite3`; npm 12 runs its install script only when allowScripts approves it), or select the PostgreSQL profile.',
        },
      ],
      retryable: false,
    });
  });

  it('checks the platform before the version', () => {
    const outcome = requireRunnable(ok(sqliteOn('win32', '3.0.0')));
    expect(!outcome.ok && outcome.error.issues[0]?.path).toBe('sqlite_platform');
  });

  // Rebuilding the driver cannot help on an unsupported platform, so that is said first.
  it('checks the platform before whether the driver loaded', () => {
    const outcome = requireRunnable(ok(sqliteOn('win32', null)));
    expect(!outcome.ok && outcome.error.issues[0]?.code).toBe('sqlite_platform_unsupported');
  });

  it('hands a stateless principal and a default data root, marked as not explicit, to the runtime', () => {
    expect(requireRunnable(ok({ options: { principal_id: 'agent' } }))).toMatchObject({ ok: true, runtime: { profile: 'stateless', principalId: 'agent' } });
    expect(requireRunnable(ok({ options: { profile: 'sqlite', principal_id: 'agent' }, env: { HOME: '/home/agent' } }))).toMatchObject({
      ok: true,
      runtime: { profile: 'sqlite', sqlite: { dataRoot: '/home/agent/.local/share/aipcs', dataRootExplicit: false } },
    });
  });

  it('stateless and postgresql run anywhere, whatever SQLite is', () => {
    expect(runnabilityFailure(ok({ platform: 'win32', sqliteVersion: null }))).toBeNull();
    const pg = ok({ options: { profile: 'postgresql', principal_id: 'agent', postgres_dsn_env: 'PG_DSN' }, platform: 'win32', sqliteVersion: '1.0.0' });
    expect(requireRunnable(pg)).toEqual({
      ok: true,
      runtime: {
        transport: 'stdio',
        logLevel: 'warning',
        http: expect.any(Object),
        profile: 'postgresql',
        principalId: 'agent',
        postgres: { dsnEnv: 'PG_DSN', connectTimeoutSeconds: 10, lockTimeoutMs: 5000, statementTimeoutMs: 30000 },
      },
    });
    expect(requireRunnable(ok())).toMatchObject({ ok: true, runtime: { profile: 'stateless', principalId: null } });
  });

  it('parses only x.y.z version texts', () => {
    expect(parseSqliteVersion('3.53.2')).toEqual([3, 53, 2]);
    expect(parseSqliteVersion('3.7.6.3')).toEqual([3, 7, 6]);
    expect(parseSqliteVersion('3.53')).toBeNull();
    expect(parseSqliteVersion(' 3.53.2')).toBeNull();
    expect(parseSqliteVersion('3.1234.2')).toBeNull();
    expect(parseSqliteVersion('3.51.3.1.2')).toBeNull();
    expect(parseSqliteVersion('3.51.3.1234')).toBeNull();
  });

  it('resolveRunnableConfiguration runs preflight, resolution and runnability in order', () => {
    const base = { env: {}, platform: 'linux' as const, sqliteVersion: '3.40.0' };
    expect(resolveRunnableConfiguration({ ...base, options: { transport: 'sse', profile: 'bogus' } })).toMatchObject({
      ok: false,
      error: { code: 'transport_not_supported' },
    });
    expect(resolveRunnableConfiguration({ ...base, options: { profile: 'bogus' } })).toMatchObject({
      ok: false,
      error: { code: 'validation_failed' },
    });
    expect(resolveRunnableConfiguration({ ...base, options: { profile: 'sqlite', principal_id: 'a', sqlite_data_root: '/r' } })).toMatchObject({
      ok: false,
      error: { code: 'unsupported_operation' },
    });
    expect(resolveRunnableConfiguration({ ...base, options: {} })).toMatchObject({ ok: true, runtime: { profile: 'stateless' } });
  });
});

describe('unexpected failures', () => {
  it('become the fixed internal error, echoing nothing of what was thrown', () => {
    const base = { env: { HOME: '/h' }, platform: 'linux' as const, sqliteVersion: '3.53.2' };
    const throwing = (): never => {
      throw new Error('/secret/config.toml');
    };
    const results = [
      resolveConfiguration({ ...base, options: { config: '/secret/config.toml' }, readConfigFile: throwing }),
      resolveConfiguration({ ...base, sqliteVersion: throwing, options: { profile: 'sqlite', principal_id: 'a' } }),
    ];
    for (const result of results) {
      expect(result).toEqual({
        ok: false,
        error: { code: 'internal_error', message: 'Configuration could not be processed safely.', issues: [], retryable: false },
      });
    }
  });
});

describe('SQLite version detection', () => {
  it('asks a lazy detector only for the sqlite profile', () => {
    let calls = 0;
    const detector = (): string => {
      calls++;
      return '3.53.2';
    };
    const base = { env: { HOME: '/h' }, platform: 'linux' as const, sqliteVersion: detector };
    expect(resolveConfiguration({ ...base, options: {} }).ok).toBe(true);
    expect(resolveConfiguration({ ...base, options: { profile: 'postgresql', principal_id: 'a', postgres_dsn_env: 'X' } }).ok).toBe(true);
    expect(calls).toBe(0);
    const sqlite = resolveConfiguration({ ...base, options: { profile: 'sqlite', principal_id: 'a' } });
    expect(calls).toBe(1);
    expect(sqlite.ok && requireRunnable(sqlite.config).ok).toBe(true);
  });
});
