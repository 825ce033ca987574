// The seventeen configuration fields of operations spec §2.1 and their names
// (CLI flag, env var, TOML location), in the order `sources` reports them.
// Owns names only: nothing here reads or validates a value.

export const CONFIG_FIELDS = [
  'profile',
  'transport',
  'http_host',
  'http_port',
  'http_path',
  'http_allowed_hosts',
  'http_allowed_origins',
  'http_session_idle_timeout_seconds',
  'http_allow_non_loopback',
  'principal_id',
  'sqlite_data_root',
  'sqlite_busy_timeout_ms',
  'postgres_dsn_env',
  'postgres_connect_timeout_seconds',
  'postgres_lock_timeout_ms',
  'postgres_statement_timeout_ms',
  'log_level',
] as const;

export type ConfigField = (typeof CONFIG_FIELDS)[number];

/** Where the winning value of a field came from; losing values are discarded. */
export type ConfigSource = 'cli' | 'environment' | 'file' | 'default';

export type ConfigSources = Readonly<Record<ConfigField, ConfigSource>>;

/** Tables of the TOML file; `null` is the top level. */
export type TomlTableName = 'identity' | 'sqlite' | 'postgresql' | 'logging' | 'streamable_http';

export interface ConfigFieldSpec {
  readonly field: ConfigField;
  /** The long option, e.g. `--postgres-dsn-env`. */
  readonly flag: string;
  /** Commander's attribute name for that option, e.g. `postgresDsnEnv`. */
  readonly optionKey: string;
  readonly envVar: string;
  readonly tomlTable: TomlTableName | null;
  readonly tomlKey: string;
}

function spec(field: ConfigField, tomlTable: TomlTableName | null, tomlKey: string): ConfigFieldSpec {
  const flag = `--${field.replaceAll('_', '-')}`;
  const optionKey = field.replace(/_([a-z])/g, (_match, letter: string) => letter.toUpperCase());
  return { field, flag, optionKey, envVar: `AIPCS_${field.toUpperCase()}`, tomlTable, tomlKey };
}

/** Per-field names, in §2.1 order. The env var is always `AIPCS_` + the upper-cased field. */
export const CONFIG_FIELD_SPECS: readonly ConfigFieldSpec[] = [
  spec('profile', null, 'profile'),
  spec('transport', null, 'transport'),
  spec('http_host', 'streamable_http', 'host'),
  spec('http_port', 'streamable_http', 'port'),
  spec('http_path', 'streamable_http', 'path'),
  spec('http_allowed_hosts', 'streamable_http', 'allowed_hosts'),
  spec('http_allowed_origins', 'streamable_http', 'allowed_origins'),
  spec('http_session_idle_timeout_seconds', 'streamable_http', 'session_idle_timeout_seconds'),
  spec('http_allow_non_loopback', 'streamable_http', 'allow_non_loopback'),
  spec('principal_id', 'identity', 'principal_id'),
  spec('sqlite_data_root', 'sqlite', 'data_root'),
  spec('sqlite_busy_timeout_ms', 'sqlite', 'busy_timeout_ms'),
  spec('postgres_dsn_env', 'postgresql', 'dsn_env'),
  spec('postgres_connect_timeout_seconds', 'postgresql', 'connect_timeout_seconds'),
  spec('postgres_lock_timeout_ms', 'postgresql', 'lock_timeout_ms'),
  spec('postgres_statement_timeout_ms', 'postgresql', 'statement_timeout_ms'),
  spec('log_level', 'logging', 'level'),
];

/** The `--config PATH` option: the only way to select a TOML file. */
export const CONFIG_FILE_FLAG = '--config';

/** Values given on the command line, keyed by field; absent means "not given". */
export type ConfigOptions = Partial<Record<ConfigField, string>> & { readonly config?: string };

/**
 * Picks the configuration options out of commander's parsed option object
 * (camelCase keys). Only string values count as given; anything else is ignored.
 */
export function configOptionsFromParsed(parsed: Readonly<Record<string, unknown>>): ConfigOptions {
  const options: Partial<Record<ConfigField, string>> & { config?: string } = {};
  for (const item of CONFIG_FIELD_SPECS) {
    const value = parsed[item.optionKey];
    if (typeof value === 'string') options[item.field] = value;
  }
  const config = parsed['config'];
  if (typeof config === 'string') options.config = config;
  return options;
}
