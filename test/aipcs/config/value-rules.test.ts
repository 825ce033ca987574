import { describe, expect, it } from 'vitest';
import { expectInvalid, expectTransportNotSupported, failure, ok, SQLITE, V1, type Call } from './helpers.js';

const PG: Call = { options: { profile: 'postgresql', principal_id: 'agent', postgres_dsn_env: 'PG_DSN' } };

function withOptions(base: Call, options: Call['options']): Call {
  return { ...base, options: { ...base.options, ...options } };
}

describe('enumerations (§2.5.1)', () => {
  it.each(['stateless', 'sqlite', 'postgresql'])('accepts profile %s', (profile) => {
    const extra = profile === 'stateless' ? {} : { principal_id: 'a', ...(profile === 'postgresql' ? { postgres_dsn_env: 'X' } : {}) };
    expect(ok({ options: { profile, ...extra }, env: { HOME: '/h' } }).profile).toBe(profile);
  });

  it.each(['SQLite', 'memory', ' sqlite', 'postgres'])('refuses profile %j', (profile) => {
    expectInvalid({ options: { profile } }, 'profile');
    expectInvalid({ env: { AIPCS_PROFILE: profile } }, 'profile');
  });

  it('refuses a non-string TOML profile', () => {
    expectInvalid({ toml: `${V1}profile = 1\n` }, 'profile');
  });

  it.each(['sse', 'STDIO', 'http', 'streamable_http'])('refuses transport %j from any source with transport_not_supported', (transport) => {
    expectTransportNotSupported({ options: { transport } });
    expectTransportNotSupported({ env: { AIPCS_TRANSPORT: transport } });
    expectTransportNotSupported({ toml: `${V1}transport = "${transport}"\n` });
  });

  it('answers an invalid resolved transport with its own fixed document, not the preflight one', () => {
    for (const call of [{ env: { AIPCS_TRANSPORT: 'sse' } }, { toml: `${V1}transport = "sse"\n` }]) {
      expect(failure(call)).toEqual({
        code: 'transport_not_supported',
        message: 'The selected transport is not supported by the documented configuration.',
        issues: [],
        retryable: false,
      });
    }
  });

  it('refuses a non-string TOML transport with transport_not_supported', () => {
    expectTransportNotSupported({ toml: `${V1}transport = true\n` });
  });

  it.each(['debug', 'info', 'warning', 'error'])('accepts log level %s', (level) => {
    expect(ok({ env: { AIPCS_LOG_LEVEL: level } }).logLevel).toBe(level);
  });

  it.each(['WARNING', 'critical', 'warn', 'trace'])('refuses log level %j', (level) => {
    expectInvalid({ options: { log_level: level } }, 'log_level');
  });

  it('refuses a non-string TOML log level', () => {
    expectInvalid({ toml: `${V1}[logging]\nlevel = 1\n` }, 'log_level');
  });
});

describe('integers (§2.2 text rules, §2.1 ranges)', () => {
  const cases: { field: string; env: string; base: Call; path: 'streamable_http' | 'sqlite' | 'postgresql'; min: number; max: number; table: string; key: string }[] =
    [
      { field: 'http_port', env: 'AIPCS_HTTP_PORT', base: {}, path: 'streamable_http', min: 1, max: 65535, table: 'streamable_http', key: 'port' },
      {
        field: 'http_session_idle_timeout_seconds',
        env: 'AIPCS_HTTP_SESSION_IDLE_TIMEOUT_SECONDS',
        base: {},
        path: 'streamable_http',
        min: 60,
        max: 86400,
        table: 'streamable_http',
        key: 'session_idle_timeout_seconds',
      },
      { field: 'sqlite_busy_timeout_ms', env: 'AIPCS_SQLITE_BUSY_TIMEOUT_MS', base: SQLITE, path: 'sqlite', min: 1, max: 30000, table: 'sqlite', key: 'busy_timeout_ms' },
      {
        field: 'postgres_connect_timeout_seconds',
        env: 'AIPCS_POSTGRES_CONNECT_TIMEOUT_SECONDS',
        base: PG,
        path: 'postgresql',
        min: 1,
        max: 60,
        table: 'postgresql',
        key: 'connect_timeout_seconds',
      },
      { field: 'postgres_lock_timeout_ms', env: 'AIPCS_POSTGRES_LOCK_TIMEOUT_MS', base: PG, path: 'postgresql', min: 1, max: 30000, table: 'postgresql', key: 'lock_timeout_ms' },
      {
        field: 'postgres_statement_timeout_ms',
        env: 'AIPCS_POSTGRES_STATEMENT_TIMEOUT_MS',
        base: withOptions(PG, { postgres_lock_timeout_ms: '1' }),
        path: 'postgresql',
        min: 1000,
        max: 300000,
        table: 'postgresql',
        key: 'statement_timeout_ms',
      },
    ];

  const read = (config: ReturnType<typeof ok>, field: string): number =>
    ({
      http_port: config.http.port,
      http_session_idle_timeout_seconds: config.http.sessionIdleTimeoutSeconds,
      sqlite_busy_timeout_ms: config.sqlite.busyTimeoutMs,
      postgres_connect_timeout_seconds: config.postgres.connectTimeoutSeconds,
      postgres_lock_timeout_ms: config.postgres.lockTimeoutMs,
      postgres_statement_timeout_ms: config.postgres.statementTimeoutMs,
    })[field] ?? Number.NaN;

  it.each(cases)('$field accepts its bounds from text and TOML', (c) => {
    for (const value of [c.min, c.max]) {
      expect(read(ok(withOptions(c.base, { [c.field]: String(value) })), c.field)).toBe(value);
      expect(read(ok({ ...c.base, env: { ...c.base.env, [c.env]: String(value) } }), c.field)).toBe(value);
      expect(read(ok({ ...c.base, toml: `${V1}[${c.table}]\n${c.key} = ${value}\n` }), c.field)).toBe(value);
    }
  });

  it.each(cases)('$field refuses out-of-range and non-canonical text', (c) => {
    const bad = [
      String(c.min - 1),
      String(c.max + 1),
      '0',
      '-1',
      '+5',
      ` ${c.max}`,
      `${c.max} `,
      `0${c.max}`,
      // A leading zero within the digit budget: only the canonical form refuses it.
      `0${c.min}`,
      '1e3',
      '10.0',
      '0x10',
      '9'.repeat(String(c.max).length + 1),
      '99999999999999999999999',
      '１２',
      'abc',
    ];
    for (const value of bad) {
      expectInvalid(withOptions(c.base, { [c.field]: value }), c.path);
      expectInvalid({ ...c.base, env: { ...c.base.env, [c.env]: value } }, c.path);
    }
  });

  it.each(cases)('$field refuses TOML values that are not native in-range integers', (c) => {
    for (const value of [`"${c.max}"`, `${c.max}.0`, 'true', `${c.max + 1}`, `${c.min - 1}`, '9223372036854775807', '[1]']) {
      expectInvalid({ ...c.base, toml: `${V1}[${c.table}]\n${c.key} = ${value}\n` }, c.path);
    }
  });

  // The derived Host list (`127.0.0.1:<port>`) would refuse these ports too; an
  // explicit list takes it out of play, so only the port range is left to refuse them.
  it('http_port refuses 0 and 65536 from every source even with an explicit Host list', () => {
    const hosts = { http_allowed_hosts: 'h.example' };
    for (const port of ['0', '65536']) {
      expectInvalid({ options: { ...hosts, http_port: port } }, 'streamable_http');
      expectInvalid({ options: hosts, env: { AIPCS_HTTP_PORT: port } }, 'streamable_http');
      expectInvalid({ toml: `${V1}[streamable_http]\nallowed_hosts = ["h.example"]\nport = ${port}\n` }, 'streamable_http');
    }
    expect(ok({ options: { ...hosts, http_port: '65535' } }).http.port).toBe(65535);
    expect(ok({ options: { ...hosts, http_port: '1' } }).http.port).toBe(1);
  });
});

describe('booleans (§2.2)', () => {
  it('accepts exactly true/false as text and native booleans in TOML', () => {
    expect(ok({ options: { http_allow_non_loopback: 'true' } }).http.allowNonLoopback).toBe(true);
    expect(ok({ env: { AIPCS_HTTP_ALLOW_NON_LOOPBACK: 'false' } }).http.allowNonLoopback).toBe(false);
    expect(ok({ toml: `${V1}[streamable_http]\nallow_non_loopback = true\n` }).http.allowNonLoopback).toBe(true);
  });

  it.each(['True', 'FALSE', '1', '0', 'yes', ' true', 'on'])('refuses %j', (value) => {
    expectInvalid({ options: { http_allow_non_loopback: value } }, 'streamable_http');
    expectInvalid({ env: { AIPCS_HTTP_ALLOW_NON_LOOPBACK: value } }, 'streamable_http');
  });

  it('refuses TOML strings and integers', () => {
    expectInvalid({ toml: `${V1}[streamable_http]\nallow_non_loopback = "true"\n` }, 'streamable_http');
    expectInvalid({ toml: `${V1}[streamable_http]\nallow_non_loopback = 1\n` }, 'streamable_http');
  });
});

describe('HTTP host (§2.5.4)', () => {
  it.each([
    ['127.0.0.1', '127.0.0.1', true],
    ['127.255.0.9', '127.255.0.9', true],
    ['0.0.0.0', '0.0.0.0', false],
    ['192.168.1.10', '192.168.1.10', false],
    ['::1', '::1', true],
    ['0:0:0:0:0:0:0:1', '::1', true],
    ['FE80::0001', 'fe80::1', false],
    ['::', '::', false],
    ['::ffff:127.0.0.1', '::ffff:127.0.0.1', true],
    ['::FFFF:7f00:1', '::ffff:127.0.0.1', true],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1', false],
  ])('accepts %s as %s', (input, normalised, loopback) => {
    const config = ok({ options: { http_host: input, http_allowed_hosts: 'h.example' } });
    expect(config.http.host).toBe(normalised);
    expect(config.http.hostIsLoopback).toBe(loopback);
  });

  it.each(['localhost', 'example.org', '127.0.0.01', '127.1', '256.0.0.1', ' 127.0.0.1', '127.0.0.1 ', '[::1]', '::1/128', '1:2:3:4:5:6:7:8:9', `1111:2222:3333:4444:5555:6666:${'7'.repeat(20)}`, ''])(
    'refuses %j',
    (host) => {
      expectInvalid({ options: { http_host: host } }, 'streamable_http');
    },
  );

  it('refuses more than 45 characters and non-string TOML', () => {
    expectInvalid({ options: { http_host: `::ffff:${'0'.repeat(40)}:1` } }, 'streamable_http');
    expectInvalid({ toml: `${V1}[streamable_http]\nhost = 127\n` }, 'streamable_http');
  });

  it('validates the host whatever the transport, and derives the default Host list from the normalised host', () => {
    expect(ok({ options: { http_host: '0:0::1', http_port: '9000' } }).http.allowedHosts).toEqual(['[::1]:9000', 'localhost:9000']);
    expect(ok({ options: { http_host: '10.0.0.1' } }).http.allowedHosts).toEqual(['10.0.0.1:8000']);
    expect(ok({ options: { http_host: '2001:DB8::1' } }).http.allowedHosts).toEqual(['[2001:db8::1]:8000']);
  });

  // A zone is the only way a valid literal grows past 45 characters or ends in whitespace.
  it('bounds a zone-scoped host at 45 characters and refuses surrounding whitespace there too', () => {
    const hosts = { http_allowed_hosts: 'h.example' };
    const at45 = `fe80::1%${'e'.repeat(37)}`;
    expect(at45).toHaveLength(45);
    expect(ok({ options: { ...hosts, http_host: at45 } }).http.host).toBe(at45);
    expectInvalid({ options: { ...hosts, http_host: `${at45}e` } }, 'streamable_http');
    expectInvalid({ options: { ...hosts, http_host: 'fe80::1%eth0 ' } }, 'streamable_http');
    expectInvalid({ env: { AIPCS_HTTP_HOST: 'fe80::1%eth0\t', AIPCS_HTTP_ALLOWED_HOSTS: 'h.example' } }, 'streamable_http');
  });

  it('a zone-scoped IPv6 host resolves only with an explicit Host list (the derived entry would be invalid)', () => {
    expectInvalid({ options: { http_host: 'fe80::1%eth0' } }, 'streamable_http');
    expect(ok({ options: { http_host: 'fe80::1%eth0', http_allowed_hosts: 'h.example' } }).http.host).toBe('fe80::1%eth0');
  });
});

describe('HTTP path (§2.5.4)', () => {
  it.each(['/', '/mcp', '/a/b-c_d~e', `/${'a'.repeat(255)}`])('accepts %j', (path) => {
    expect(ok({ options: { http_path: path } }).http.path).toBe(path);
  });

  it.each(['mcp', '', '/a b', '/a\tb', '/a//b', '//', '/a/.b', '/.', '/a?b', '/a#b', '/é', `/${'a'.repeat(256)}`, '/a\x1fb'])(
    'refuses %j',
    (path) => {
      expectInvalid({ options: { http_path: path } }, 'streamable_http');
    },
  );
});

describe('Host and Origin lists (§2.5.4)', () => {
  it.each([
    'a.example',
    'A.EXAMPLE:443',
    'a.example:*',
    'localhost:1',
    'h:65535',
    '127.0.0.1:8000',
    '[::1]',
    '[::1]:8080',
    '[2001:DB8::1]:*',
    'a-b.c-d',
  ])('accepts the Host entry %j', (entry) => {
    expect(ok({ options: { http_allowed_hosts: entry } }).http.allowedHosts).toEqual([entry]);
  });

  it.each([
    'a.example:0',
    'a.example:65536',
    'a.example:080',
    'a.example:',
    '*.example',
    'a_b.example',
    '-a.example',
    'a.example-',
    '[::1',
    '[zz::1]',
    '[1:2]',
    'a.example:*:*',
    'a.example/path',
    'http://a.example',
    'é.example',
  ])('refuses the Host entry %j', (entry) => {
    expectInvalid({ options: { http_allowed_hosts: entry } }, 'streamable_http');
  });

  it.each(['https://a.example', 'http://a.example:8080', 'HTTPS://A.Example:443', 'http://[::1]:3000', 'https://127.0.0.1'])(
    'accepts the Origin entry %j',
    (entry) => {
      expect(ok({ options: { http_allowed_origins: entry } }).http.allowedOrigins).toEqual([entry]);
    },
  );

  it.each([
    'https://a.example/',
    'https://a.example/path',
    'https://*.example',
    '*',
    'ftp://a.example',
    'ws://a.example',
    'wss://a.example:8443',
    'https:a.example',
    // The scheme starts the entry: nothing may come before it.
    'xhttps://a.example',
    'git+http://a.example',
    'a.example',
    'https://a.example:*',
    'https://a.example:0',
    'https://a.example:65536',
    'https://',
    'null',
  ])('refuses the Origin entry %j', (entry) => {
    expectInvalid({ options: { http_allowed_origins: entry } }, 'streamable_http');
  });

  it('splits text lists on commas and takes TOML arrays of strings', () => {
    expect(ok({ env: { AIPCS_HTTP_ALLOWED_HOSTS: 'a.example,b.example:*' } }).http.allowedHosts).toEqual(['a.example', 'b.example:*']);
    expect(ok({ toml: `${V1}[streamable_http]\nallowed_hosts = ["a.example", "b.example"]\n` }).http.allowedHosts).toEqual([
      'a.example',
      'b.example',
    ]);
  });

  it('accepts 16 entries and refuses 17, duplicates, empty entries and surrounding whitespace', () => {
    const hosts = Array.from({ length: 16 }, (_, index) => `h${index}.example`);
    expect(ok({ options: { http_allowed_hosts: hosts.join(',') } }).http.allowedHosts).toHaveLength(16);
    for (const bad of [[...hosts, 'x.example'].join(','), 'a.example,a.example', 'a.example,,b.example', 'a.example,', ',a.example', 'a.example, b.example', ' a.example']) {
      expectInvalid({ options: { http_allowed_hosts: bad } }, 'streamable_http');
    }
  });

  it('refuses entries that differ only in letter case as duplicates: entries are case-insensitive (spec 2.5.4)', () => {
    expectInvalid({ options: { http_allowed_hosts: 'A.example,a.example' } }, 'streamable_http');
    expectInvalid({ toml: `${V1}[streamable_http]\nallowed_hosts = ["[::1]:8000", "LocalHost:8000", "localhost:8000"]\n` }, 'streamable_http');
    expectInvalid({ options: { http_allowed_origins: 'https://App.example,https://app.example' } }, 'streamable_http');
    expectInvalid({ options: { http_allowed_origins: 'HTTP://app.example,http://app.example' } }, 'streamable_http');
    expect(ok({ options: { http_allowed_hosts: 'A.example,a.example:*' } }).http.allowedHosts).toEqual(['A.example', 'a.example:*']);
  });

  it('refuses entries longer than 255 characters', () => {
    const exact = `${'a'.repeat(250)}:8080`; // 255 characters
    expect(ok({ options: { http_allowed_hosts: exact } }).http.allowedHosts).toEqual([exact]);
    expectInvalid({ options: { http_allowed_hosts: `a${exact}` } }, 'streamable_http');
    // A bare name may take the whole 255 (§2.5.4 gives no DNS rule; 254 and
    // 255 were refused), and may end with the dot of a fully qualified name.
    expect(ok({ options: { http_allowed_hosts: 'a'.repeat(255) } }).http.allowedHosts).toHaveLength(1);
    expect(ok({ options: { http_allowed_hosts: `${'a'.repeat(254)}.` } }).http.allowedHosts).toHaveLength(1);
    expectInvalid({ options: { http_allowed_hosts: 'a'.repeat(256) } }, 'streamable_http');
    expect(ok({ options: { http_allowed_hosts: 'a.example.,a.example.:8000' } }).http.allowedHosts).toEqual(['a.example.', 'a.example.:8000']);
    expect(ok({ options: { http_allowed_origins: 'https://a.example.' } }).http.allowedOrigins).toEqual(['https://a.example.']);
  });

  it('allows an empty Origin list only as TOML allowed_origins = []', () => {
    const config = ok({ toml: `${V1}[streamable_http]\nallowed_origins = []\n` });
    expect(config.http.allowedOrigins).toEqual([]);
    expect(config.sources.http_allowed_origins).toBe('file');
    expectInvalid({ toml: `${V1}[streamable_http]\nallowed_hosts = []\n` }, 'streamable_http');
    expectInvalid({ env: { AIPCS_HTTP_ALLOWED_ORIGINS: '' } }, 'streamable_http');
  });

  it('refuses TOML lists that are strings or hold non-strings', () => {
    expectInvalid({ toml: `${V1}[streamable_http]\nallowed_hosts = "a.example"\n` }, 'streamable_http');
    expectInvalid({ toml: `${V1}[streamable_http]\nallowed_hosts = ["a.example", 1]\n` }, 'streamable_http');
    expectInvalid({ toml: `${V1}[streamable_http]\nallowed_origins = [["https://a.example"]]\n` }, 'streamable_http');
  });
});

describe('principal id (§2.5.3)', () => {
  it.each(['agent', 'local agent', 'é-agent', '中文', 'a'.repeat(128), '😀'.repeat(128), '~!@#$%^&*()'])('accepts %j', (principal) => {
    expect(ok({ options: { principal_id: principal } }).principalId).toBe(principal);
  });

  it.each([
    ['empty', ''],
    ['leading space', ' agent'],
    ['trailing space', 'agent '],
    ['129 code points', 'a'.repeat(129)],
    ['129 astral code points', '😀'.repeat(129)],
    ['Cc', 'a\u0007b'],
    ['tab', 'a\tb'],
    ['newline', 'a\nb'],
    ['DEL', 'a\u007fb'],
    ['Cf', 'a\u200bb'],
    ['BOM', '\ufeffagent'],
    ['Zs no-break space', 'a\u00a0b'],
    ['Zs ideographic space', 'a\u3000b'],
    ['Zl', 'a\u2028b'],
    ['Zp', 'a\u2029b'],
    ['Co', 'a\ue000b'],
    ['Cn', 'a\u0378b'],
    ['Cs lone surrogate', 'a\ud800b'],
  ])('refuses %s', (_label, principal) => {
    expectInvalid({ options: { principal_id: principal } }, 'principal_id');
    expectInvalid({ env: { AIPCS_PRINCIPAL_ID: principal } }, 'principal_id');
  });

  it('refuses a non-string TOML principal', () => {
    expectInvalid({ toml: `${V1}[identity]\nprincipal_id = 5\n` }, 'principal_id');
  });
});

describe('SQLite data root (§2.5.2)', () => {
  // 4096 characters, not UTF-16 units: 4095 astral ones after the slash are 8191 units.
  it.each(['/data', '/', '/a b/c', '/a/../b', `/${'a'.repeat(4095)}`, `/${'\u{1F600}'.repeat(4095)}`])('accepts %j (the location policy runs later, in storage)', (root) => {
    expect(ok(withOptions(SQLITE, { sqlite_data_root: root })).sqlite.dataRoot).toBe(root);
  });

  it.each(['', 'relative', './data', ' /data', '/data ', '/da\u0007ta', '/da\u200bta', `/${'a'.repeat(4096)}`, `/${'\u{1F600}'.repeat(4096)}`, 'C:\\data', '~/data'])('refuses %j', (root) => {
    expectInvalid(withOptions(SQLITE, { sqlite_data_root: root }), 'sqlite');
  });

  it('uses the Windows notion of absolute on win32', () => {
    const call: Call = { options: { profile: 'sqlite', principal_id: 'a', sqlite_data_root: 'C:\\data' }, platform: 'win32' };
    expect(ok(call).sqlite.dataRoot).toBe('C:\\data');
    expectInvalid({ ...call, options: { ...call.options, sqlite_data_root: '/data' } }, 'sqlite');
    // A drive without a root is relative to that drive's current directory.
    expectInvalid({ ...call, options: { ...call.options, sqlite_data_root: 'C:data' } }, 'sqlite');
  });

  it('refuses a non-string TOML data root', () => {
    expectInvalid({ ...SQLITE, toml: `${V1}[sqlite]\ndata_root = 1\n` }, 'sqlite');
  });
});

describe('PostgreSQL DSN reference', () => {
  it.each(['A', 'AIPCS_POSTGRES_DSN', 'DSN_2', `A${'B'.repeat(127)}`])('accepts %j', (name) => {
    expect(ok(withOptions(PG, { postgres_dsn_env: name })).postgres.dsnEnv).toBe(name);
  });

  it.each(['', 'lower', 'Mixed', '1DSN', '_DSN', 'A-B', 'A B', ' A', `A${'B'.repeat(128)}`, 'postgres://user@host/db'])('refuses %j', (name) => {
    expectInvalid(withOptions(PG, { postgres_dsn_env: name }), 'postgresql');
  });

  it('refuses a non-string TOML reference', () => {
    expectInvalid({ options: { profile: 'postgresql', principal_id: 'a' }, toml: `${V1}[postgresql]\ndsn_env = 1\n` }, 'postgresql');
  });
});

describe('validation order', () => {
  it('reports a file problem before any option problem', () => {
    expectInvalid({ options: { profile: 'bogus' }, toml: 'not toml' }, 'configuration');
  });

  it('checks fields in §2.1 order, then the cross-rules', () => {
    expectInvalid({ options: { profile: 'bogus', log_level: 'bogus' } }, 'profile');
    expectInvalid({ options: { http_port: '0', principal_id: '' } }, 'streamable_http');
    expectInvalid({ options: { profile: 'sqlite', log_level: 'bogus' }, env: { HOME: '/h' } }, 'log_level');
    expectInvalid({ options: { transport: 'sse', profile: 'bogus' } }, 'profile');
    expectTransportNotSupported({ options: { transport: 'sse', log_level: 'bogus' } });
  });

  // The reference's order (decisions-aipcs-config.md 1), not §2.1's: the data
  // root (explicit, then the default) before the DSN reference, and log_level
  // before the busy and PostgreSQL timeouts.
  it('checks the data root before the DSN reference, and log_level before the timeouts', () => {
    expectInvalid({ options: { profile: 'sqlite', principal_id: 'a', sqlite_data_root: 'relative', postgres_dsn_env: 'lower' }, env: { HOME: '/h' } }, 'sqlite');
    expectInvalid({ options: { profile: 'sqlite', principal_id: 'a', postgres_dsn_env: 'lower' }, env: {} }, 'sqlite');
    expectInvalid({ ...SQLITE, options: { ...SQLITE.options, log_level: 'bogus', sqlite_busy_timeout_ms: '0' } }, 'log_level');
    expectInvalid({ ...PG, options: { ...PG.options, log_level: 'bogus', postgres_statement_timeout_ms: '1' } }, 'log_level');
  });
});
