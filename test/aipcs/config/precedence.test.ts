import { describe, expect, it } from 'vitest';
import { CONFIG_FIELDS, CONFIG_FIELD_SPECS, configOptionsFromParsed, type ConfigField } from '../../../src/aipcs/config/fields.js';
import type { ConfigIssuePath } from '../../../src/aipcs/config/errors.js';
import { resolveConfiguration, type ResolvedConfig } from '../../../src/aipcs/config/resolve.js';
import { expectInvalid, expectTransportNotSupported, ok, V1, type Call } from './helpers.js';

interface Row {
  readonly field: ConfigField;
  /** Options/env that make every tier of this field resolvable. */
  readonly context: Call;
  readonly cli: string;
  readonly env: string;
  /** TOML lines (with their table header) giving the file value. */
  readonly toml: string;
  readonly get: (config: ResolvedConfig) => unknown;
  readonly expected: { cli: unknown; env: unknown; file: unknown; default: unknown };
  /** Context for the default tier when the field's absence is itself invalid there. */
  readonly defaultContext?: Call;
}

const SQLITE_CONTEXT: Call = { options: { profile: 'sqlite', principal_id: 'agent' }, env: { HOME: '/home/agent' } };
const PG_CONTEXT: Call = { options: { profile: 'postgresql', principal_id: 'agent', postgres_dsn_env: 'PG_DSN' } };

const ROWS: readonly Row[] = [
  {
    field: 'profile',
    context: { options: { principal_id: 'agent' }, env: { HOME: '/home/agent' } },
    cli: 'sqlite',
    env: 'stateless',
    toml: 'profile = "sqlite"',
    get: (c) => c.profile,
    expected: { cli: 'sqlite', env: 'stateless', file: 'sqlite', default: 'stateless' },
  },
  {
    field: 'transport',
    context: {},
    cli: 'streamable-http',
    env: 'stdio',
    toml: 'transport = "streamable-http"',
    get: (c) => c.transport,
    expected: { cli: 'streamable-http', env: 'stdio', file: 'streamable-http', default: 'stdio' },
  },
  {
    field: 'http_host',
    context: {},
    cli: '127.0.0.2',
    env: '::1',
    toml: '[streamable_http]\nhost = "127.0.0.3"',
    get: (c) => [c.http.host, c.http.allowedHosts],
    expected: {
      cli: ['127.0.0.2', ['127.0.0.2:8000']],
      env: ['::1', ['[::1]:8000', 'localhost:8000']],
      file: ['127.0.0.3', ['127.0.0.3:8000']],
      default: ['127.0.0.1', ['127.0.0.1:8000', 'localhost:8000']],
    },
  },
  {
    field: 'http_port',
    context: {},
    cli: '8001',
    env: '8002',
    toml: '[streamable_http]\nport = 8003',
    get: (c) => [c.http.port, c.http.allowedHosts],
    expected: {
      cli: [8001, ['127.0.0.1:8001', 'localhost:8001']],
      env: [8002, ['127.0.0.1:8002', 'localhost:8002']],
      file: [8003, ['127.0.0.1:8003', 'localhost:8003']],
      default: [8000, ['127.0.0.1:8000', 'localhost:8000']],
    },
  },
  {
    field: 'http_path',
    context: {},
    cli: '/cli',
    env: '/env',
    toml: '[streamable_http]\npath = "/file"',
    get: (c) => c.http.path,
    expected: { cli: '/cli', env: '/env', file: '/file', default: '/mcp' },
  },
  {
    field: 'http_allowed_hosts',
    context: {},
    cli: 'cli.example',
    env: 'env.example,env.example:*',
    toml: '[streamable_http]\nallowed_hosts = ["file.example:8443"]',
    get: (c) => c.http.allowedHosts,
    expected: {
      cli: ['cli.example'],
      env: ['env.example', 'env.example:*'],
      file: ['file.example:8443'],
      default: ['127.0.0.1:8000', 'localhost:8000'],
    },
  },
  {
    field: 'http_allowed_origins',
    context: {},
    cli: 'https://cli.example',
    env: 'http://env.example:8080,https://[::1]',
    toml: '[streamable_http]\nallowed_origins = ["https://file.example"]',
    get: (c) => c.http.allowedOrigins,
    expected: {
      cli: ['https://cli.example'],
      env: ['http://env.example:8080', 'https://[::1]'],
      file: ['https://file.example'],
      default: [],
    },
  },
  {
    field: 'http_session_idle_timeout_seconds',
    context: {},
    cli: '61',
    env: '62',
    toml: '[streamable_http]\nsession_idle_timeout_seconds = 63',
    get: (c) => c.http.sessionIdleTimeoutSeconds,
    expected: { cli: 61, env: 62, file: 63, default: 1800 },
  },
  {
    field: 'http_allow_non_loopback',
    context: {},
    cli: 'true',
    env: 'false',
    toml: '[streamable_http]\nallow_non_loopback = true',
    get: (c) => c.http.allowNonLoopback,
    expected: { cli: true, env: false, file: true, default: false },
  },
  {
    field: 'principal_id',
    context: {},
    cli: 'cli agent',
    env: 'env-agent',
    toml: '[identity]\nprincipal_id = "file-agent"',
    get: (c) => c.principalId,
    expected: { cli: 'cli agent', env: 'env-agent', file: 'file-agent', default: null },
  },
  {
    field: 'sqlite_data_root',
    context: SQLITE_CONTEXT,
    cli: '/cli/root',
    env: '/env/root',
    toml: '[sqlite]\ndata_root = "/file/root"',
    get: (c) => [c.sqlite.dataRoot, c.sqlite.dataRootExplicit],
    expected: {
      cli: ['/cli/root', true],
      env: ['/env/root', true],
      file: ['/file/root', true],
      default: ['/home/agent/.local/share/aipcs', false],
    },
  },
  {
    field: 'sqlite_busy_timeout_ms',
    context: SQLITE_CONTEXT,
    cli: '100',
    env: '200',
    toml: '[sqlite]\nbusy_timeout_ms = 300',
    get: (c) => c.sqlite.busyTimeoutMs,
    expected: { cli: 100, env: 200, file: 300, default: 5000 },
  },
  {
    field: 'postgres_dsn_env',
    context: { options: { profile: 'postgresql', principal_id: 'agent' } },
    cli: 'CLI_DSN',
    env: 'ENV_DSN',
    toml: '[postgresql]\ndsn_env = "FILE_DSN"',
    get: (c) => c.postgres.dsnEnv,
    expected: { cli: 'CLI_DSN', env: 'ENV_DSN', file: 'FILE_DSN', default: null },
    defaultContext: {},
  },
  {
    field: 'postgres_connect_timeout_seconds',
    context: PG_CONTEXT,
    cli: '11',
    env: '12',
    toml: '[postgresql]\nconnect_timeout_seconds = 13',
    get: (c) => c.postgres.connectTimeoutSeconds,
    expected: { cli: 11, env: 12, file: 13, default: 10 },
  },
  {
    field: 'postgres_lock_timeout_ms',
    context: PG_CONTEXT,
    cli: '101',
    env: '102',
    toml: '[postgresql]\nlock_timeout_ms = 103',
    get: (c) => c.postgres.lockTimeoutMs,
    expected: { cli: 101, env: 102, file: 103, default: 5000 },
  },
  {
    field: 'postgres_statement_timeout_ms',
    context: PG_CONTEXT,
    cli: '30001',
    env: '30002',
    toml: '[postgresql]\nstatement_timeout_ms = 30003',
    get: (c) => c.postgres.statementTimeoutMs,
    expected: { cli: 30001, env: 30002, file: 30003, default: 30000 },
  },
  {
    field: 'log_level',
    context: {},
    cli: 'debug',
    env: 'info',
    toml: '[logging]\nlevel = "error"',
    get: (c) => c.logLevel,
    expected: { cli: 'debug', env: 'info', file: 'error', default: 'warning' },
  },
];

function envName(field: ConfigField): string {
  return `AIPCS_${field.toUpperCase()}`;
}

describe('field names (§2.1)', () => {
  it('lists the seventeen fields in sources order with their flags, variables and TOML keys', () => {
    expect(CONFIG_FIELD_SPECS.map((item) => item.field)).toEqual([...CONFIG_FIELDS]);
    expect(CONFIG_FIELDS).toHaveLength(17);
    expect(CONFIG_FIELD_SPECS.map((item) => [item.flag, item.envVar, item.tomlTable, item.tomlKey])).toEqual([
      ['--profile', 'AIPCS_PROFILE', null, 'profile'],
      ['--transport', 'AIPCS_TRANSPORT', null, 'transport'],
      ['--http-host', 'AIPCS_HTTP_HOST', 'streamable_http', 'host'],
      ['--http-port', 'AIPCS_HTTP_PORT', 'streamable_http', 'port'],
      ['--http-path', 'AIPCS_HTTP_PATH', 'streamable_http', 'path'],
      ['--http-allowed-hosts', 'AIPCS_HTTP_ALLOWED_HOSTS', 'streamable_http', 'allowed_hosts'],
      ['--http-allowed-origins', 'AIPCS_HTTP_ALLOWED_ORIGINS', 'streamable_http', 'allowed_origins'],
      ['--http-session-idle-timeout-seconds', 'AIPCS_HTTP_SESSION_IDLE_TIMEOUT_SECONDS', 'streamable_http', 'session_idle_timeout_seconds'],
      ['--http-allow-non-loopback', 'AIPCS_HTTP_ALLOW_NON_LOOPBACK', 'streamable_http', 'allow_non_loopback'],
      ['--principal-id', 'AIPCS_PRINCIPAL_ID', 'identity', 'principal_id'],
      ['--sqlite-data-root', 'AIPCS_SQLITE_DATA_ROOT', 'sqlite', 'data_root'],
      ['--sqlite-busy-timeout-ms', 'AIPCS_SQLITE_BUSY_TIMEOUT_MS', 'sqlite', 'busy_timeout_ms'],
      ['--postgres-dsn-env', 'AIPCS_POSTGRES_DSN_ENV', 'postgresql', 'dsn_env'],
      ['--postgres-connect-timeout-seconds', 'AIPCS_POSTGRES_CONNECT_TIMEOUT_SECONDS', 'postgresql', 'connect_timeout_seconds'],
      ['--postgres-lock-timeout-ms', 'AIPCS_POSTGRES_LOCK_TIMEOUT_MS', 'postgresql', 'lock_timeout_ms'],
      ['--postgres-statement-timeout-ms', 'AIPCS_POSTGRES_STATEMENT_TIMEOUT_MS', 'postgresql', 'statement_timeout_ms'],
      ['--log-level', 'AIPCS_LOG_LEVEL', 'logging', 'level'],
    ]);
  });

  it('picks string options out of a commander option object by camelCase name', () => {
    const options = configOptionsFromParsed({
      config: '/etc/aipcs.toml',
      profile: 'sqlite',
      httpAllowNonLoopback: 'true',
      postgresStatementTimeoutMs: '1000',
      format: 'json',
      yes: true,
      principalId: undefined,
      httpPort: 8000,
      logLevel: null,
    });
    expect(options).toEqual({
      config: '/etc/aipcs.toml',
      profile: 'sqlite',
      http_allow_non_loopback: 'true',
      postgres_statement_timeout_ms: '1000',
    });
  });

  it('keeps an empty --config, so that it is refused rather than ignored', () => {
    const options = configOptionsFromParsed({ config: '' });
    expect(options).toEqual({ config: '' });
    const result = resolveConfiguration({ options, env: {}, platform: 'linux', sqliteVersion: '3.53.2' });
    expect(result).toMatchObject({ ok: false, error: { code: 'validation_failed', issues: [{ path: 'configuration' }] } });
  });
});

describe('precedence CLI > environment > TOML > default (§2.2)', () => {
  it.each(ROWS)('$field', (row) => {
    const merge = (extra: Call): Call => ({
      options: { ...row.context.options, ...extra.options },
      env: { ...row.context.env, ...extra.env },
      ...(extra.toml === undefined ? {} : { toml: extra.toml }),
    });
    const toml = V1 + row.toml + '\n';
    const all = ok(merge({ options: { [row.field]: row.cli }, env: { [envName(row.field)]: row.env }, toml }));
    expect(row.get(all)).toEqual(row.expected.cli);
    expect(all.sources[row.field]).toBe('cli');

    const envAndFile = ok(merge({ env: { [envName(row.field)]: row.env }, toml }));
    expect(row.get(envAndFile)).toEqual(row.expected.env);
    expect(envAndFile.sources[row.field]).toBe('environment');

    const fileOnly = ok(merge({ toml }));
    expect(row.get(fileOnly)).toEqual(row.expected.file);
    expect(fileOnly.sources[row.field]).toBe('file');

    const none = ok(row.defaultContext ?? row.context);
    expect(row.get(none)).toEqual(row.expected.default);
    expect(none.sources[row.field]).toBe('default');
  });

  it('reports every other field as default when nothing is configured', () => {
    const config = ok();
    expect(Object.keys(config.sources)).toEqual([...CONFIG_FIELDS]);
    expect(Object.values(config.sources).every((source) => source === 'default')).toBe(true);
  });

  it('keeps only the winner: an invalid losing value is never validated', () => {
    const config = ok({ options: { log_level: 'error' }, env: { AIPCS_LOG_LEVEL: 'loud' }, toml: `${V1}[logging]\nlevel = 7\n` });
    expect(config.logLevel).toBe('error');
  });
});

describe('presence (§2.2): a present but empty value is validated and fails', () => {
  const pathOf = (field: ConfigField): ConfigIssuePath | null => {
    if (field === 'transport') return null;
    if (field.startsWith('http_')) return 'streamable_http';
    if (field.startsWith('sqlite_')) return 'sqlite';
    if (field.startsWith('postgres_')) return 'postgresql';
    return field as ConfigIssuePath;
  };

  it.each(ROWS)('$field from the environment never falls through to the file', (row) => {
    const call: Call = {
      options: { ...row.context.options },
      env: { ...row.context.env, [envName(row.field)]: '' },
      toml: V1 + row.toml + '\n',
    };
    const path = pathOf(row.field);
    if (path === null) expectTransportNotSupported(call);
    else expectInvalid(call, path);
  });

  it.each(ROWS)('$field given as an empty option fails', (row) => {
    const call: Call = { options: { ...row.context.options, [row.field]: '' }, env: { ...row.context.env } };
    const path = pathOf(row.field);
    if (path === null) expectTransportNotSupported(call);
    else expectInvalid(call, path);
  });

  it('treats an absent variable (undefined) as not present', () => {
    expect(ok({ env: { AIPCS_LOG_LEVEL: undefined }, toml: `${V1}[logging]\nlevel = "debug"\n` }).logLevel).toBe('debug');
  });
});
