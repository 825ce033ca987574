import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConfigIssuePath } from '../../../src/aipcs/config/errors.js';
import { readConfigFileBytes } from '../../../src/aipcs/config/config-file-reader.js';
import { resolveConfiguration } from '../../../src/aipcs/config/resolve.js';
import { parseConfigFile } from '../../../src/aipcs/config/toml-file.js';
import { expectInvalid, ok, V1 } from './helpers.js';

const parse = (text: string) => parseConfigFile(Buffer.from(text, 'utf8'));

describe('TOML document rules (§2.4)', () => {
  it('accepts a complete file with every key', () => {
    const text = `${V1}profile = "sqlite"
transport = "stdio"

[identity]
principal_id = "agent"

[sqlite]
data_root = "/srv/aipcs"
busy_timeout_ms = 1000

[logging]
level = "info"

[streamable_http]
host = "127.0.0.1"
port = 8080
path = "/mcp"
allowed_hosts = ["127.0.0.1:8080", "localhost:8080"]
allowed_origins = []
session_idle_timeout_seconds = 600
allow_non_loopback = false
`;
    const config = ok({ toml: text });
    expect(config.profile).toBe('sqlite');
    expect(config.sqlite.dataRoot).toBe('/srv/aipcs');
    expect(config.http.port).toBe(8080);
    expect(Object.values(config.sources).filter((source) => source === 'file')).toHaveLength(13);
  });

  it('requires config_version = 1 as an integer [config_version]', () => {
    for (const text of ['', 'profile = "stateless"\n', 'config_version = 2\n', 'config_version = 0\n', 'config_version = "1"\n', 'config_version = 1.0\n', 'config_version = true\n', '[config_version]\n']) {
      expectInvalid({ toml: text }, 'config_version');
    }
  });

  it('refuses unknown top-level keys and tables [configuration]', () => {
    expectInvalid({ toml: `${V1}dsn = "postgres://secret"\n` }, 'configuration');
    expectInvalid({ toml: `${V1}[extra]\n` }, 'configuration');
    expectInvalid({ toml: `${V1}[streamable-http]\n` }, 'configuration');
  });

  it.each(['identity', 'sqlite', 'postgresql', 'logging', 'streamable_http'])('refuses unknown keys and non-tables in [%s] [%s]', (table) => {
    expectInvalid({ toml: `${V1}[${table}]\nunknown = 1\n` }, table as ConfigIssuePath);
    expectInvalid({ toml: `${V1}${table} = "x"\n` }, table as ConfigIssuePath);
    expectInvalid({ toml: `${V1}[[${table}]]\n` }, table as ConfigIssuePath);
    expectInvalid({ toml: `${V1}${table} = []\n` }, table as ConfigIssuePath);
  });

  it('has no key for a literal credential', () => {
    expectInvalid({ toml: `${V1}[postgresql]\ndsn = "postgresql://user:pw@host/db"\n` }, 'postgresql');
    expectInvalid({ toml: `${V1}[postgresql]\npassword = "pw"\n` }, 'postgresql');
  });

  it('refuses keys of another table', () => {
    expectInvalid({ toml: `${V1}[sqlite]\ndsn_env = "X"\n` }, 'sqlite');
    expectInvalid({ toml: `${V1}[identity]\nprofile = "sqlite"\n` }, 'identity');
  });

  it('refuses malformed TOML [configuration]', () => {
    for (const text of ['config_version = ', 'config_version = 1\nconfig_version = 1\n', '[identity\n', 'a b = 1', `${V1}[identity]\nprincipal_id = "unterminated\n`]) {
      expectInvalid({ toml: text }, 'configuration');
    }
  });

  it('refuses syntax that only TOML 1.1 allows [configuration]', () => {
    expect(ok({ toml: `${V1}identity = { principal_id = "a" }\n` }).principalId).toBe('a');
    expectInvalid({ toml: `${V1}identity = {\n  principal_id = "a" }\n` }, 'configuration');
    expectInvalid({ toml: `${V1}identity = { principal_id = "a", }\n` }, 'configuration');
    expectInvalid({ toml: `${V1}identity = { principal_id = "a" # c\n}\n` }, 'configuration');
    expectInvalid({ toml: `${V1}[identity]\nprincipal_id = "a\\e"\n` }, 'configuration');
    expectInvalid({ toml: `${V1}[identity]\nprincipal_id = "\\x41"\n` }, 'configuration');
    expectInvalid({ toml: `${V1}[identity]\nprincipal_id = """\n\\x41"""\n` }, 'configuration');
    // A lone quote inside a multi-line string does not end it.
    expectInvalid({ toml: `${V1}[identity]\nprincipal_id = """a"\\e"""\n` }, 'configuration');
    expectInvalid({ toml: `${V1}[identity]\nprincipal_id = 07:32\n` }, 'configuration');
    expectInvalid({ toml: `${V1}[identity]\nprincipal_id = 1979-05-27T07:32Z\n` }, 'configuration');
    expectInvalid({ toml: `${V1}[identity]\nprincipal_id = 1979-05-27 07:32\n` }, 'configuration');
    // An escaped quote does not end the string, so an escape after it is still seen.
    expectInvalid({ toml: `${V1}[identity]\nprincipal_id = "a\\"\\e"\n` }, 'configuration');
  });

  it('accepts the TOML 1.0 forms next to those', () => {
    expect(ok({ toml: `${V1}[identity]\nprincipal_id = 'a\\e'\n` }).principalId).toBe('a\\e');
    expect(ok({ toml: `${V1}[identity]\nprincipal_id = "a\\\\e"\n` }).principalId).toBe('a\\e');
    expect(ok({ toml: `${V1}[identity]\nprincipal_id = "\\u0041\\U0001F600"\n` }).principalId).toBe('A😀');
    expect(ok({ toml: `${V1}[identity]\nprincipal_id = """a""""\n` }).principalId).toBe('a"');
    // Two quotes before the closing delimiter still close it: what follows is a comment, not a string.
    expect(ok({ toml: `${V1}[identity]\nprincipal_id = """a""""" # not \\e\n` }).principalId).toBe('a""');
    // A comment right after a bare value is not part of the value.
    expect(ok({ toml: `${V1}[streamable_http]\nport = 8080#07:30\n` }).http.port).toBe(8080);
    // TOML 1.0 allows newlines inside an array, also within an inline table.
    expect(ok({ toml: `${V1}streamable_http = { allowed_hosts = [\n  "a.example",\n] }\n` }).http.allowedHosts).toEqual(['a.example']);
    expect(ok({ toml: `${V1}[identity] # a, trailing } comment\nprincipal_id = "x,}" # , }\n` }).principalId).toBe('x,}');
    expect(ok({ toml: `${V1}[streamable_http]\nallowed_hosts = [\n  "a.example",\n  "b.example",\n]\n` }).http.allowedHosts).toEqual([
      'a.example',
      'b.example',
    ]);
    // Times with seconds parse (and then fail as the wrong type for the key).
    expectInvalid({ toml: `${V1}[identity]\nprincipal_id = 07:32:00\n` }, 'principal_id');
    expectInvalid({ toml: `${V1}[identity]\nprincipal_id = 1979-05-27T07:32:00-07:00\n` }, 'principal_id');
  });

  it('reads an integer beyond 64 bits whole, so it fails at its field like any out-of-range value', () => {
    expectInvalid({ toml: `${V1}[streamable_http]\nport = 99999999999999999999\n` }, 'streamable_http');
    expectInvalid({ toml: `${V1}[identity]\nprincipal_id = -9223372036854775809\n` }, 'principal_id');
    expectInvalid({ toml: 'config_version = 18446744073709551617\n' }, 'config_version');
  });

  it('bounds depth to 8, with the document at depth 0', () => {
    const nested = (levels: number): string => `${'['.repeat(levels)}"x"${']'.repeat(levels)}`;
    // table 1, arrays 2..7, string at 8: within bounds, then a type error.
    expectInvalid({ toml: `${V1}[streamable_http]\nallowed_hosts = ${nested(6)}\n` }, 'streamable_http');
    expectInvalid({ toml: `${V1}[streamable_http]\nallowed_hosts = ${nested(7)}\n` }, 'configuration');
  });

  it('bounds arrays to 16 items', () => {
    const items = (count: number): string => `[${Array.from({ length: count }, (_, i) => `"h${i}.example"`).join(', ')}]`;
    expect(ok({ toml: `${V1}[streamable_http]\nallowed_hosts = ${items(16)}\n` }).http.allowedHosts).toHaveLength(16);
    expectInvalid({ toml: `${V1}[streamable_http]\nallowed_hosts = ${items(17)}\n` }, 'configuration');
  });

  it('bounds table entries plus array items to 128', () => {
    const row = `[${Array.from({ length: 16 }, () => '1').join(',')}]`;
    const rows = (count: number): string => `[${Array.from({ length: count }, () => row).join(',')}]`;
    // 1 (config_version) + 1 (table) + 1 (key) + 7 rows + 112 items = 122: within bounds, then a type error.
    expectInvalid({ toml: `${V1}[streamable_http]\nallowed_hosts = ${rows(7)}\n` }, 'streamable_http');
    // 1 + 1 + 1 + 8 + 128 = 139.
    expectInvalid({ toml: `${V1}[streamable_http]\nallowed_hosts = ${rows(8)}\n` }, 'configuration');
    // Exactly at the bound: 1 + 1 + 1 + 8 rows + 112 + 5 items = 128 passes the bound (then a type error); one more item is 129.
    const short = (items: number): string => `[${Array.from({ length: items }, () => '1').join(',')}]`;
    expectInvalid({ toml: `${V1}[streamable_http]\nallowed_hosts = [${Array.from({ length: 7 }, () => row).join(',')},${short(5)}]\n` }, 'streamable_http');
    expectInvalid({ toml: `${V1}[streamable_http]\nallowed_hosts = [${Array.from({ length: 7 }, () => row).join(',')},${short(6)}]\n` }, 'configuration');
  });

  it('a present storage table counts even when empty', () => {
    const result = parse(`${V1}[sqlite]\n[postgresql]\n`);
    expect(result).toEqual({ ok: true, file: { values: {}, sqliteTable: true, postgresqlTable: true } });
  });

  it('keeps a __proto__ key as an ordinary (unknown) key', () => {
    expectInvalid({ toml: `${V1}[identity]\n__proto__ = "x"\n` }, 'identity');
    expectInvalid({ toml: `${V1}__proto__ = 1\n` }, 'configuration');
  });
});

describe('file bytes (§2.4)', () => {
  it('accepts 65,536 bytes and refuses 65,537', () => {
    const padding = (size: number): string => `${V1}#${'x'.repeat(size - V1.length - 2)}\n`;
    expect(padding(65_536)).toHaveLength(65_536);
    expect(parse(padding(65_536)).ok).toBe(true);
    expect(parse(padding(65_537))).toEqual({ ok: false, path: 'configuration' });
  });

  it('requires strict UTF-8 without a BOM', () => {
    expect(parseConfigFile(Buffer.concat([Buffer.from(`${V1}# `), Buffer.from([0xff, 0xfe]), Buffer.from('\n')]))).toEqual({
      ok: false,
      path: 'configuration',
    });
    expect(parseConfigFile(Buffer.concat([Buffer.from(`${V1}# `), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('\n')]))).toEqual({
      ok: false,
      path: 'configuration',
    });
    expect(parseConfigFile(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(V1)]))).toEqual({ ok: false, path: 'configuration' });
    expect(parse(`${V1}[identity]\nprincipal_id = "é"\n`).ok).toBe(true);
  });
});

describe('reading the file (the only I/O)', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'aipcs-config-test-'));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  const resolveFile = (path: string) =>
    resolveConfiguration({ options: { config: path }, env: {}, platform: 'linux', sqliteVersion: '3.53.2' });

  it('reads a regular file, and one reached through a symlink', () => {
    const file = join(dir, 'aipcs.toml');
    writeFileSync(file, `${V1}[logging]\nlevel = "debug"\n`);
    const link = join(dir, 'link.toml');
    symlinkSync(file, link);
    for (const path of [file, link]) {
      const result = resolveFile(path);
      expect(result.ok && result.config.logLevel).toBe('debug');
    }
  });

  it('refuses a missing path, a directory, a symlink to a directory, a dangling symlink and an empty path [configuration]', () => {
    const sub = join(dir, 'sub');
    mkdirSync(sub);
    symlinkSync(sub, join(dir, 'dirlink'));
    symlinkSync(join(dir, 'missing'), join(dir, 'dangling'));
    for (const path of [join(dir, 'missing.toml'), sub, join(dir, 'dirlink'), join(dir, 'dangling'), '', 'a\0b']) {
      const result = resolveFile(path);
      expect(result).toMatchObject({ ok: false, error: { code: 'validation_failed', issues: [{ path: 'configuration' }] } });
    }
  });

  it('refuses a FIFO without blocking', () => {
    const fifo = join(dir, 'fifo');
    try {
      execFileSync('mkfifo', [fifo]);
    } catch {
      return; // no mkfifo on this host
    }
    expect(readConfigFileBytes(fifo)).toEqual({ ok: false });
  });

  // Opening a FIFO would release a writer waiting for a reader: a path that is not a regular file is never opened.
  it('does not open a FIFO that a writer is waiting on', async () => {
    const fifo = join(dir, 'waited-fifo');
    const marker = join(dir, 'writer-opened');
    try {
      execFileSync('mkfifo', [fifo]);
    } catch {
      return; // no mkfifo on this host
    }
    const writer = spawn('sh', ['-c', 'exec 3>"$1"; : > "$2"', 'sh', fifo, marker], { stdio: 'ignore' });
    try {
      await delay(300);
      expect(readConfigFileBytes(fifo)).toEqual({ ok: false });
      await delay(300);
      expect(existsSync(marker)).toBe(false);
    } finally {
      writer.kill();
    }
  });

  it('opens a name that is not UTF-8 by its bytes, given surrogate-escaped', () => {
    writeFileSync(Buffer.concat([Buffer.from(join(dir, 'raw-')), Buffer.of(0xff), Buffer.from('.toml')]), `${V1}[logging]\nlevel = "error"\n`);
    const result = resolveFile(join(dir, 'raw-\udcff.toml'));
    expect(result.ok && result.config.logLevel).toBe('error');
  });

  it('reads at most one byte past the limit', () => {
    const big = join(dir, 'big.toml');
    writeFileSync(big, Buffer.alloc(200_000, 0x23));
    const read = readConfigFileBytes(big);
    expect(read.ok && read.bytes.length).toBe(65_537);
    expect(resolveFile(big)).toMatchObject({ ok: false, error: { issues: [{ path: 'configuration' }] } });
  });
});
