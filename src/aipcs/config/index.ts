// The public face of configuration: what the command tree and composition
// import. Re-exports only; the rules live in the modules beside it.

export { CONFIG_FIELDS, CONFIG_FIELD_SPECS, CONFIG_FILE_FLAG, configOptionsFromParsed } from './fields.js';
export type { ConfigField, ConfigFieldSpec, ConfigOptions, ConfigSource, ConfigSources, TomlTableName } from './fields.js';
export type { ConfigErrorCode, ConfigErrorDocument, ConfigIssue, ConfigIssueCode, ConfigIssuePath } from './errors.js';
export { readConfigFileBytes } from './config-file-reader.js';
export type { ConfigFileRead, ConfigFileReader } from './config-file-reader.js';
export {
  LOG_LEVELS,
  PROFILES,
  TRANSPORTS,
  isRunnable,
  requireRunnable,
  resolveConfiguration,
  resolveRunnableConfiguration,
  runnabilityFailure,
  transportPreflight,
} from './resolve.js';
export type {
  ConfigResolution,
  HttpSettings,
  LogLevel,
  PostgresSettings,
  PreflightOutcome,
  Profile,
  ResolveInput,
  ResolvedConfig,
  RunnableOutcome,
  RuntimeConfig,
  SqliteSettings,
  Transport,
} from './resolve.js';
export { configShowResult, configValidateResult } from './reports.js';
export type { ConfigShowResult, ConfigValidateResult } from './reports.js';
