import { describe, expect, it } from 'vitest';
import { expectInvalid, ok, V1, type Call } from './helpers.js';

const HOME = { HOME: '/home/agent' };

describe('profile cross-rules (§2.6)', () => {
  describe('1. a persistent profile needs a principal [principal_id]', () => {
    it('sqlite without principal', () => {
      expectInvalid({ options: { profile: 'sqlite' }, env: HOME }, 'principal_id');
    });
    it('postgresql without principal', () => {
      expectInvalid({ options: { profile: 'postgresql', postgres_dsn_env: 'PG_DSN' } }, 'principal_id');
    });
    it('stateless may have one', () => {
      expect(ok({ options: { principal_id: 'agent' } }).principalId).toBe('agent');
    });
    it('is checked before the storage rules', () => {
      expectInvalid({ options: { profile: 'postgresql' }, toml: `${V1}[sqlite]\n` }, 'principal_id');
    });
  });

  describe('2. stateless carries no storage settings [storage]', () => {
    it.each<[string, Call]>([
      ['an empty [sqlite] table', { toml: `${V1}[sqlite]\n` }],
      ['an empty [postgresql] table', { toml: `${V1}[postgresql]\n` }],
      ['a data root', { options: { sqlite_data_root: '/data' } }],
      ['a DSN reference', { env: { AIPCS_POSTGRES_DSN_ENV: 'PG_DSN' } }],
      ['an explicit busy timeout, even the default value', { options: { sqlite_busy_timeout_ms: '5000' } }],
      ['an explicit connect timeout', { options: { postgres_connect_timeout_seconds: '10' } }],
      ['an explicit lock timeout', { env: { AIPCS_POSTGRES_LOCK_TIMEOUT_MS: '5000' } }],
      ['an explicit statement timeout', { toml: `${V1}[postgresql]\nstatement_timeout_ms = 30000\n` }],
      // Without the [postgresql] table, which the table rule refuses on its own.
      ['an explicit statement timeout, even the default value, on the command line', { options: { postgres_statement_timeout_ms: '30000' } }],
    ])('%s', (_label, call) => {
      expectInvalid(call, 'storage');
    });

    it('never computes a default data root (HOME is not needed)', () => {
      const config = ok({ env: {} });
      expect(config.sqlite.dataRoot).toBeNull();
    });
  });

  describe('3. sqlite carries no PostgreSQL settings [postgresql]', () => {
    const sqlite: Call = { options: { profile: 'sqlite', principal_id: 'agent' }, env: HOME };
    it.each<[string, Call]>([
      ['an empty [postgresql] table', { ...sqlite, toml: `${V1}[postgresql]\n` }],
      ['a DSN reference', { ...sqlite, options: { ...sqlite.options, postgres_dsn_env: 'PG_DSN' } }],
      ['an explicit connect timeout', { ...sqlite, options: { ...sqlite.options, postgres_connect_timeout_seconds: '5' } }],
      ['an explicit lock timeout', { ...sqlite, env: { ...HOME, AIPCS_POSTGRES_LOCK_TIMEOUT_MS: '5' } }],
      ['an explicit statement timeout', { ...sqlite, toml: `${V1}[postgresql]\nstatement_timeout_ms = 1000\n` }],
      ['an explicit statement timeout from the environment', { ...sqlite, env: { ...HOME, AIPCS_POSTGRES_STATEMENT_TIMEOUT_MS: '1000' } }],
    ])('%s', (_label, call) => {
      expectInvalid(call, 'postgresql');
    });

    it('accepts its own table and settings', () => {
      const config = ok({ ...sqlite, toml: `${V1}[sqlite]\ndata_root = "/srv/aipcs"\nbusy_timeout_ms = 250\n` });
      expect(config.sqlite).toEqual({ dataRoot: '/srv/aipcs', dataRootExplicit: true, busyTimeoutMs: 250 });
    });
  });

  describe('4. postgresql: no SQLite settings and a DSN reference [storage]; statement ≥ lock [postgresql]', () => {
    const pg: Call = { options: { profile: 'postgresql', principal_id: 'agent', postgres_dsn_env: 'PG_DSN' } };
    it.each<[string, Call]>([
      ['an empty [sqlite] table', { ...pg, toml: `${V1}[sqlite]\n` }],
      ['a data root', { ...pg, options: { ...pg.options, sqlite_data_root: '/data' } }],
      ['an explicit busy timeout', { ...pg, env: { AIPCS_SQLITE_BUSY_TIMEOUT_MS: '5000' } }],
      ['a missing DSN reference', { options: { profile: 'postgresql', principal_id: 'agent' } }],
    ])('%s', (_label, call) => {
      expectInvalid(call, 'storage');
    });

    it('statement timeout below lock timeout', () => {
      expectInvalid({ ...pg, options: { ...pg.options, postgres_lock_timeout_ms: '1001', postgres_statement_timeout_ms: '1000' } }, 'postgresql');
      expectInvalid({ ...pg, options: { ...pg.options, postgres_lock_timeout_ms: '30000', postgres_statement_timeout_ms: '29999' } }, 'postgresql');
    });

    it('statement timeout equal to lock timeout', () => {
      const config = ok({ ...pg, options: { ...pg.options, postgres_lock_timeout_ms: '2000', postgres_statement_timeout_ms: '2000' } });
      expect(config.postgres).toEqual({ dsnEnv: 'PG_DSN', connectTimeoutSeconds: 10, lockTimeoutMs: 2000, statementTimeoutMs: 2000 });
    });

    it('never computes a default data root', () => {
      expect(ok(pg).sqlite.dataRoot).toBeNull();
    });
  });

  describe('5. streamable-http off loopback needs allow_non_loopback = true and an explicit Host list [streamable_http]', () => {
    const http = (options: Call['options']): Call => ({ options: { transport: 'streamable-http', ...options } });
    it.each(['0.0.0.0', '192.168.1.2', '::', '2001:db8::1'])('refuses %s alone, with only the flag, or with only the Host list', (host) => {
      expectInvalid(http({ http_host: host }), 'streamable_http');
      expectInvalid(http({ http_host: host, http_allow_non_loopback: 'true' }), 'streamable_http');
      expectInvalid(http({ http_host: host, http_allowed_hosts: 'mcp.example' }), 'streamable_http');
      expectInvalid(http({ http_host: host, http_allow_non_loopback: 'false', http_allowed_hosts: 'mcp.example' }), 'streamable_http');
    });

    it('accepts a non-loopback bind with both', () => {
      const config = ok(http({ http_host: '0.0.0.0', http_allow_non_loopback: 'true', http_allowed_hosts: 'mcp.example' }));
      expect(config.http).toMatchObject({ host: '0.0.0.0', allowNonLoopback: true, allowedHosts: ['mcp.example'] });
    });

    it.each(['127.0.0.1', '127.9.9.9', '::1', '::ffff:127.0.0.1'])('accepts the loopback address %s without either', (host) => {
      expect(ok(http({ http_host: host })).transport).toBe('streamable-http');
    });

    it('does not apply to stdio', () => {
      expect(ok({ options: { http_host: '0.0.0.0' } }).http.host).toBe('0.0.0.0');
    });
  });
});
