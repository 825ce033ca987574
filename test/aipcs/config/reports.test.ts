import { describe, expect, it } from 'vitest';
import { renderJson } from '../../../src/common/json.js';
import { configShowResult, configValidateResult } from '../../../src/aipcs/config/reports.js';
import { requireRunnable } from '../../../src/aipcs/config/resolve.js';
import { ok, V1 } from './helpers.js';

const compact = (value: unknown): string => renderJson(value, { keyOrder: 'insertion', asciiOnly: true, floatStyle: 'python' });

describe('config show (§1.7)', () => {
  it('matches the documented example exactly, key order included', () => {
    const config = ok({ options: { profile: 'sqlite', principal_id: 'agent' }, env: { HOME: '/home/agent' }, sqliteVersion: '3.53.4' });
    expect(compact(configShowResult(config))).toBe(
      '{"config_version":1,"profile":"sqlite","available":true,"runnable":true,"transport":"stdio",' +
        '"identity":{"principal_configured":true},"logging":{"level":"warning"},' +
        '"storage":{"sqlite_data_root_configured":false,"sqlite_busy_timeout_ms":5000,' +
        '"postgresql_dsn_configured":false,"postgresql_connect_timeout_seconds":10,' +
        '"postgresql_lock_timeout_ms":5000,"postgresql_statement_timeout_ms":30000,' +
        '"sqlite_runtime":{"detected_version":"3.53.4","minimum_version":"3.51.3","supported":true}},' +
        '"streamable_http":{"configured":false,"host_configured":false,"port_configured":false,' +
        '"path_configured":false,"host_policy_configured":false,"origin_policy_configured":false,' +
        '"session_idle_timeout_seconds":1800,"non_loopback_explicitly_allowed":false},' +
        '"sources":{"profile":"cli","transport":"default","http_host":"default","http_port":"default",' +
        '"http_path":"default","http_allowed_hosts":"default","http_allowed_origins":"default",' +
        '"http_session_idle_timeout_seconds":"default","http_allow_non_loopback":"default",' +
        '"principal_id":"cli","sqlite_data_root":"default","sqlite_busy_timeout_ms":"default",' +
        '"postgres_dsn_env":"default","postgres_connect_timeout_seconds":"default",' +
        '"postgres_lock_timeout_ms":"default","postgres_statement_timeout_ms":"default","log_level":"default"}}',
    );
  });

  it('omits sqlite_runtime for other profiles', () => {
    const result = configShowResult(ok());
    expect(result.storage).not.toHaveProperty('sqlite_runtime');
    expect(result).toMatchObject({ profile: 'stateless', available: true, runnable: true, identity: { principal_configured: false } });
    const pg = configShowResult(ok({ options: { profile: 'postgresql', principal_id: 'a', postgres_dsn_env: 'PG' } }));
    expect(pg.storage).not.toHaveProperty('sqlite_runtime');
  });

  // streamable_http.configured follows the transport (D6); the other *_configured flags follow their own field's source.
  it('reports an explicit stdio transport, false and explicit settings each under their own flag', () => {
    const result = configShowResult(
      ok({ options: { transport: 'stdio', http_allowed_hosts: 'a.example' }, toml: `${V1}[streamable_http]\nallow_non_loopback = false\n` }),
    );
    expect(result.sources).toMatchObject({ transport: 'cli', http_allowed_hosts: 'cli', http_host: 'default', http_allow_non_loopback: 'file' });
    expect(result.streamable_http).toMatchObject({
      configured: false,
      host_configured: false,
      host_policy_configured: true,
      non_loopback_explicitly_allowed: false,
    });
  });

  it('succeeds for a profile that cannot run here, and says so', () => {
    const old = configShowResult(ok({ options: { profile: 'sqlite', principal_id: 'a', sqlite_data_root: '/r' }, sqliteVersion: '3.40.1' }));
    expect(old).toMatchObject({ available: false, runnable: false });
    expect(old.storage.sqlite_runtime).toEqual({ detected_version: '3.40.1', minimum_version: '3.51.3', supported: false });

    const unreadable = configShowResult(ok({ options: { profile: 'sqlite', principal_id: 'a', sqlite_data_root: '/r' }, sqliteVersion: 'garbage' }));
    expect(unreadable.storage.sqlite_runtime).toEqual({ detected_version: null, minimum_version: '3.51.3', supported: false });

    const windows = configShowResult(
      ok({ options: { profile: 'sqlite', principal_id: 'a', sqlite_data_root: 'C:\\r' }, platform: 'win32', sqliteVersion: '3.53.0' }),
    );
    expect(windows).toMatchObject({ available: false, runnable: false, storage: { sqlite_runtime: { supported: true } } });
  });

  it('reports explicit settings as configured booleans and values only where documented', () => {
    const result = configShowResult(
      ok({
        options: { transport: 'streamable-http', http_host: '127.0.0.1', http_port: '8000', profile: 'postgresql', principal_id: 'a' },
        env: { AIPCS_POSTGRES_DSN_ENV: 'PG_DSN', AIPCS_HTTP_SESSION_IDLE_TIMEOUT_SECONDS: '90' },
        toml: `${V1}[streamable_http]\npath = "/mcp"\nallowed_hosts = ["a.example"]\nallowed_origins = []\nallow_non_loopback = true\n[postgresql]\nlock_timeout_ms = 100\n[logging]\nlevel = "debug"\n`,
      }),
    );
    expect(result).toMatchObject({
      profile: 'postgresql',
      transport: 'streamable-http',
      logging: { level: 'debug' },
      storage: { postgresql_dsn_configured: true, postgresql_lock_timeout_ms: 100, sqlite_data_root_configured: false },
      streamable_http: {
        configured: true,
        // *_configured means "not the default source", even when the value equals the default (9.18).
        host_configured: true,
        port_configured: true,
        path_configured: true,
        host_policy_configured: true,
        origin_policy_configured: true,
        session_idle_timeout_seconds: 90,
        non_loopback_explicitly_allowed: true,
      },
    });
    expect(result.sources).toMatchObject({ http_host: 'cli', postgres_dsn_env: 'environment', http_allowed_origins: 'file', log_level: 'file' });
  });
});

describe('config validate (§1.7)', () => {
  it('returns the fixed shape for a runnable configuration', () => {
    const outcome = requireRunnable(ok({ options: { profile: 'postgresql', principal_id: 'a', postgres_dsn_env: 'PG' } }));
    if (!outcome.ok) throw new Error('expected runnable');
    expect(compact(configValidateResult(outcome.runtime))).toBe('{"config_version":1,"valid":true,"profile":"postgresql","runnable":true}');
  });
});
