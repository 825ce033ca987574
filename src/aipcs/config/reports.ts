// The `config show` and `config validate` result objects (operations spec
// §1.7), keys in the documented order. Built from a ResolvedConfig only, so
// they can hold booleans, enumerations, bounded integers and source labels,
// never a principal, path, host, port, DSN reference or variable name.

import type { ConfigSource } from './fields.js';
import { isRunnable, sqliteRuntimeReport, type Profile, type ResolvedConfig, type LogLevel, type Transport } from './resolve.js';

export type ConfigSourcesResult = {
  profile: ConfigSource;
  transport: ConfigSource;
  http_host: ConfigSource;
  http_port: ConfigSource;
  http_path: ConfigSource;
  http_allowed_hosts: ConfigSource;
  http_allowed_origins: ConfigSource;
  http_session_idle_timeout_seconds: ConfigSource;
  http_allow_non_loopback: ConfigSource;
  principal_id: ConfigSource;
  sqlite_data_root: ConfigSource;
  sqlite_busy_timeout_ms: ConfigSource;
  postgres_dsn_env: ConfigSource;
  postgres_connect_timeout_seconds: ConfigSource;
  postgres_lock_timeout_ms: ConfigSource;
  postgres_statement_timeout_ms: ConfigSource;
  log_level: ConfigSource;
};

export type SqliteRuntimeResult = { detected_version: string | null; minimum_version: string; supported: boolean };

export type ConfigShowStorage = {
  sqlite_data_root_configured: boolean;
  sqlite_busy_timeout_ms: number;
  postgresql_dsn_configured: boolean;
  postgresql_connect_timeout_seconds: number;
  postgresql_lock_timeout_ms: number;
  postgresql_statement_timeout_ms: number;
  /** Present only for the sqlite profile. */
  sqlite_runtime?: SqliteRuntimeResult;
};

// Type aliases rather than interfaces: they must be assignable to the output
// layer's JSON object type, which has an index signature.
export type ConfigShowResult = {
  config_version: 1;
  profile: Profile;
  available: boolean;
  runnable: boolean;
  transport: Transport;
  identity: { principal_configured: boolean };
  logging: { level: LogLevel };
  storage: ConfigShowStorage;
  streamable_http: {
    configured: boolean;
    host_configured: boolean;
    port_configured: boolean;
    path_configured: boolean;
    host_policy_configured: boolean;
    origin_policy_configured: boolean;
    session_idle_timeout_seconds: number;
    non_loopback_explicitly_allowed: boolean;
  };
  sources: ConfigSourcesResult;
};

export type ConfigValidateResult = { config_version: 1; valid: true; profile: Profile; runnable: true };

/** `config show`: succeeds even when the profile cannot run here (`runnable` says so). */
export function configShowResult(config: ResolvedConfig): ConfigShowResult {
  const runnable = isRunnable(config);
  const configured = (field: keyof ConfigSourcesResult): boolean => config.sources[field] !== 'default';
  const storage: ConfigShowStorage = {
    sqlite_data_root_configured: configured('sqlite_data_root'),
    sqlite_busy_timeout_ms: config.sqlite.busyTimeoutMs,
    postgresql_dsn_configured: config.postgres.dsnEnv !== null,
    postgresql_connect_timeout_seconds: config.postgres.connectTimeoutSeconds,
    postgresql_lock_timeout_ms: config.postgres.lockTimeoutMs,
    postgresql_statement_timeout_ms: config.postgres.statementTimeoutMs,
  };
  if (config.profile === 'sqlite') {
    const report = sqliteRuntimeReport(config);
    storage.sqlite_runtime = {
      detected_version: report.detectedVersion,
      minimum_version: report.minimumVersion,
      supported: report.supported,
    };
  }
  const s = config.sources;
  return {
    config_version: 1,
    profile: config.profile,
    available: runnable,
    runnable,
    transport: config.transport,
    identity: { principal_configured: config.principalId !== null },
    logging: { level: config.logLevel },
    storage,
    streamable_http: {
      configured: config.transport === 'streamable-http',
      host_configured: configured('http_host'),
      port_configured: configured('http_port'),
      path_configured: configured('http_path'),
      host_policy_configured: configured('http_allowed_hosts'),
      origin_policy_configured: configured('http_allowed_origins'),
      session_idle_timeout_seconds: config.http.sessionIdleTimeoutSeconds,
      non_loopback_explicitly_allowed: config.http.allowNonLoopback,
    },
    sources: {
      profile: s.profile,
      transport: s.transport,
      http_host: s.http_host,
      http_port: s.http_port,
      http_path: s.http_path,
      http_allowed_hosts: s.http_allowed_hosts,
      http_allowed_origins: s.http_allowed_origins,
      http_session_idle_timeout_seconds: s.http_session_idle_timeout_seconds,
      http_allow_non_loopback: s.http_allow_non_loopback,
      principal_id: s.principal_id,
      sqlite_data_root: s.sqlite_data_root,
      sqlite_busy_timeout_ms: s.sqlite_busy_timeout_ms,
      postgres_dsn_env: s.postgres_dsn_env,
      postgres_connect_timeout_seconds: s.postgres_connect_timeout_seconds,
      postgres_lock_timeout_ms: s.postgres_lock_timeout_ms,
      postgres_statement_timeout_ms: s.postgres_statement_timeout_ms,
      log_level: s.log_level,
    },
  };
}

/** `config validate`: only for a configuration that passed requireRunnable. */
export function configValidateResult(config: { readonly profile: Profile }): ConfigValidateResult {
  return { config_version: 1, valid: true, profile: config.profile, runnable: true };
}
