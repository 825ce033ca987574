// Configuration resolution (operations spec §2.2–§2.8): CLI > environment >
// TOML > default per field, the value rules, the profile cross-rules and the
// runnability check, ending in a typed ResolvedConfig or one safe error
// document. Reads only the selected TOML file (through an injectable reader)
// and never touches storage, the DSN variable or a driver.

import {
  CONFIGURATION_INTERNAL_ERROR,
  invalidConfiguration,
  LEGACY_LISTENER_REFUSED,
  SQLITE_MINIMUM_VERSION,
  SQLITE_PLATFORM_UNSUPPORTED,
  sqliteDriverNotLoaded,
  sqliteRuntimeUnsupported,
  TRANSPORT_NOT_SUPPORTED,
  type ConfigErrorDocument,
  type ConfigIssuePath,
} from './errors.js';
import { CONFIG_FIELD_SPECS, type ConfigField, type ConfigOptions, type ConfigSource, type ConfigSources } from './fields.js';
import { readConfigFileBytes, type ConfigFileReader } from './config-file-reader.js';
import { defaultAllowedHosts, isValidHostEntry, isValidHttpPath, isValidListShape, isValidOriginEntry } from './http-rules.js';
import { parseIpLiteral } from './ip-address.js';
import { defaultSqliteDataRoot, isValidDataRoot } from './paths.js';
import {
  formatSqliteVersion,
  isSupportedSqlitePlatform,
  isSupportedSqliteVersion,
  parseSqliteVersion,
  type SqliteVersion,
} from './runnability.js';
import { hasSurroundingWhitespace, isPrintable } from './text-rules.js';
import { parseConfigFile, type ConfigFileValues } from './toml-file.js';
import { codePointLength } from '../../common/code-points.js';

export const PROFILES = ['stateless', 'sqlite', 'postgresql'] as const;
export type Profile = (typeof PROFILES)[number];
export const TRANSPORTS = ['stdio', 'streamable-http'] as const;
export type Transport = (typeof TRANSPORTS)[number];
export const LOG_LEVELS = ['debug', 'info', 'warning', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface HttpSettings {
  /** Normalised literal IP (never a host name). */
  readonly host: string;
  readonly hostIsLoopback: boolean;
  readonly port: number;
  readonly path: string;
  /** Host header allow-list: explicit, or derived from host and port (§2.5.4). */
  readonly allowedHosts: readonly string[];
  /** Origin allow-list; may be empty (only through TOML `allowed_origins = []` or by default). */
  readonly allowedOrigins: readonly string[];
  readonly sessionIdleTimeoutSeconds: number;
  readonly allowNonLoopback: boolean;
}

export interface SqliteSettings {
  /** Explicit root, or the platform default for the sqlite profile; null for other profiles without one. */
  readonly dataRoot: string | null;
  /** True when the root came from CLI, environment or file (not the platform default). */
  readonly dataRootExplicit: boolean;
  readonly busyTimeoutMs: number;
}

export interface PostgresSettings {
  /** The NAME of the variable holding the DSN; the DSN itself is read only by composition. */
  readonly dsnEnv: string | null;
  readonly connectTimeoutSeconds: number;
  readonly lockTimeoutMs: number;
  readonly statementTimeoutMs: number;
}

/** What this host offers, recorded at resolution for runnability and `config show`. */
export interface HostFacts {
  readonly platform: NodeJS.Platform;
  /** The detected SQLite version if it was readable as x.y.z; null when unreadable or the profile is not sqlite. */
  readonly sqliteVersion: SqliteVersion | null;
  /**
   * False when the sqlite profile found no SQLite to ask: the driver's native
   * binding did not load (its install script was skipped, or it was built for
   * another Node.js), which a reinstall mends and a newer SQLite does not.
   */
  readonly sqliteDriverLoaded: boolean;
}

export interface ResolvedConfig {
  readonly profile: Profile;
  readonly transport: Transport;
  readonly logLevel: LogLevel;
  readonly principalId: string | null;
  readonly http: HttpSettings;
  readonly sqlite: SqliteSettings;
  readonly postgres: PostgresSettings;
  /** The winning source of each of the 17 fields, in §2.1 order. */
  readonly sources: ConfigSources;
  readonly host: HostFacts;
}

export type ConfigResolution =
  | { readonly ok: true; readonly config: ResolvedConfig }
  | { readonly ok: false; readonly error: ConfigErrorDocument };

export interface ResolveInput {
  readonly options: ConfigOptions;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly platform: NodeJS.Platform;
  /**
   * `sqlite_version()` as reported by the driver, or null if the driver could
   * not be loaded or asked (reported as "Detected no SQLite"). A function is
   * called only when the profile is sqlite, so other profiles never load the
   * SQLite library.
   */
  readonly sqliteVersion: string | null | (() => string | null);
  /** Reads the `--config` file; defaults to the real file system. Tests inject bytes. */
  readonly readConfigFile?: ConfigFileReader;
}

// ---------------------------------------------------------------------------
// Transport preflight (§2.3)

const RETIRED_TRANSPORT_ENV = 'AIPCS_MCP_TRANSPORT';
const LISTENER_GUARD_ENV = [
  'FASTMCP_HOST',
  'FASTMCP_PORT',
  'FASTMCP_MOUNT_PATH',
  'FASTMCP_SSE_PATH',
  'FASTMCP_MESSAGE_PATH',
  'FASTMCP_STREAMABLE_HTTP_PATH',
  'AIPCS_HOST',
  'AIPCS_PORT',
  'AIPCS_MOUNT_PATH',
  'AIPCS_MCP_HOST',
  'AIPCS_MCP_PORT',
  'AIPCS_MCP_MOUNT_PATH',
] as const;

export type PreflightOutcome = { readonly ok: true } | { readonly ok: false; readonly error: ConfigErrorDocument };

/**
 * Runs before anything else in every command: an unknown `--transport`, the
 * retired AIPCS_MCP_TRANSPORT or any undocumented listener variable (non-empty)
 * gives `transport_not_supported`. These variables are guards only; their
 * values are never used.
 */
export function transportPreflight(options: ConfigOptions, env: Readonly<Record<string, string | undefined>>): PreflightOutcome {
  const cliTransport = options.transport;
  const refused =
    (cliTransport !== undefined && !(TRANSPORTS as readonly string[]).includes(cliTransport)) ||
    isNonEmpty(env[RETIRED_TRANSPORT_ENV]) ||
    LISTENER_GUARD_ENV.some((name) => isNonEmpty(env[name]));
  return refused ? { ok: false, error: LEGACY_LISTENER_REFUSED } : { ok: true };
}

function isNonEmpty(value: string | undefined): boolean {
  return value !== undefined && value.length > 0;
}

// ---------------------------------------------------------------------------
// Resolution

/**
 * Thrown only inside resolveConfiguration: the first failing rule wins and
 * the seventeen steps stay a straight line. Never escapes this module.
 */
class Rejection {
  constructor(readonly error: ConfigErrorDocument) {}
}

function reject(path: ConfigIssuePath): never {
  throw new Rejection(invalidConfiguration(path));
}

interface Picked {
  readonly source: ConfigSource;
  /** Text for cli/environment, a native TOML value for file, undefined for default. */
  readonly value: unknown;
}

const EMPTY_FILE: ConfigFileValues = { values: {}, sqliteTable: false, postgresqlTable: false };

export function resolveConfiguration(input: ResolveInput): ConfigResolution {
  try {
    return { ok: true, config: resolveOrReject(input) };
  } catch (error) {
    if (error instanceof Rejection) return { ok: false, error: error.error };
    return { ok: false, error: CONFIGURATION_INTERNAL_ERROR };
  }
}

function readFile(input: ResolveInput): ConfigFileValues {
  const path = input.options.config;
  if (path === undefined) return EMPTY_FILE;
  const read = (input.readConfigFile ?? readConfigFileBytes)(path);
  if (!read.ok) reject('configuration');
  const parsed = parseConfigFile(read.bytes);
  if (!parsed.ok) reject(parsed.path);
  return parsed.file;
}

function pick(input: ResolveInput, file: ConfigFileValues): Record<ConfigField, Picked> {
  const picked = {} as Record<ConfigField, Picked>;
  for (const item of CONFIG_FIELD_SPECS) {
    const cli = input.options[item.field];
    const env = input.env[item.envVar];
    if (cli !== undefined) picked[item.field] = { source: 'cli', value: cli };
    else if (env !== undefined) picked[item.field] = { source: 'environment', value: env };
    else if (Object.hasOwn(file.values, item.field)) picked[item.field] = { source: 'file', value: file.values[item.field] };
    else picked[item.field] = { source: 'default', value: undefined };
  }
  return picked;
}

function resolveOrReject(input: ResolveInput): ResolvedConfig {
  const file = readFile(input);
  const p = pick(input, file);
  const explicit = (field: ConfigField): boolean => p[field].source !== 'default';

  const profile = choice(p.profile, PROFILES, 'stateless', 'profile');
  const transport = transportChoice(p.transport);

  const hostLiteral = httpHost(p.http_host);
  const port = integer(p.http_port, { min: 1, max: 65_535, fallback: 8000, path: 'streamable_http' });
  const path = httpPath(p.http_path);
  const allowNonLoopback = boolean(p.http_allow_non_loopback, false, 'streamable_http');
  const allowedHosts = hostList(p.http_allowed_hosts, hostLiteral.text, port);
  const allowedOrigins = originList(p.http_allowed_origins);
  const sessionIdleTimeoutSeconds = integer(p.http_session_idle_timeout_seconds, {
    min: 60,
    max: 86_400,
    fallback: 1800,
    path: 'streamable_http',
  });

  const principalId = principal(p.principal_id);
  let dataRoot = dataRootValue(p.sqlite_data_root, input.platform);
  if (profile === 'sqlite' && dataRoot === null) {
    const fallback = defaultSqliteDataRoot(input.platform, input.env);
    if (!fallback.ok) reject('sqlite');
    dataRoot = fallback.root;
  }
  const dsnEnv = dsnReference(p.postgres_dsn_env);
  const logLevel = choice(p.log_level, LOG_LEVELS, 'warning', 'log_level');
  const busyTimeoutMs = integer(p.sqlite_busy_timeout_ms, { min: 1, max: 30_000, fallback: 5000, path: 'sqlite' });
  const connectTimeoutSeconds = integer(p.postgres_connect_timeout_seconds, { min: 1, max: 60, fallback: 10, path: 'postgresql' });
  const lockTimeoutMs = integer(p.postgres_lock_timeout_ms, { min: 1, max: 30_000, fallback: 5000, path: 'postgresql' });
  const statementTimeoutMs = integer(p.postgres_statement_timeout_ms, { min: 1000, max: 300_000, fallback: 30_000, path: 'postgresql' });

  // Profile cross-rules (§2.6), in order.
  const postgresTimeoutsExplicit =
    explicit('postgres_connect_timeout_seconds') || explicit('postgres_lock_timeout_ms') || explicit('postgres_statement_timeout_ms');
  if (profile !== 'stateless' && principalId === null) reject('principal_id');
  if (
    profile === 'stateless' &&
    (file.sqliteTable || file.postgresqlTable || dataRoot !== null || dsnEnv !== null || explicit('sqlite_busy_timeout_ms') || postgresTimeoutsExplicit)
  ) {
    reject('storage');
  }
  if (profile === 'sqlite' && (file.postgresqlTable || dsnEnv !== null || postgresTimeoutsExplicit)) reject('postgresql');
  if (profile === 'postgresql' && (file.sqliteTable || dataRoot !== null || explicit('sqlite_busy_timeout_ms') || dsnEnv === null)) {
    reject('storage');
  }
  if (profile === 'postgresql' && statementTimeoutMs < lockTimeoutMs) reject('postgresql');
  if (transport === 'streamable-http' && !hostLiteral.isLoopback && !(allowNonLoopback && explicit('http_allowed_hosts'))) {
    reject('streamable_http');
  }

  const sources = {} as Record<ConfigField, ConfigSource>;
  for (const item of CONFIG_FIELD_SPECS) sources[item.field] = p[item.field].source;

  return {
    profile,
    transport,
    logLevel,
    principalId,
    http: {
      host: hostLiteral.text,
      hostIsLoopback: hostLiteral.isLoopback,
      port,
      path,
      allowedHosts,
      allowedOrigins,
      sessionIdleTimeoutSeconds,
      allowNonLoopback,
    },
    sqlite: { dataRoot, dataRootExplicit: explicit('sqlite_data_root'), busyTimeoutMs },
    postgres: { dsnEnv, connectTimeoutSeconds, lockTimeoutMs, statementTimeoutMs },
    sources,
    host: hostFacts(input, profile),
  };
}

function hostFacts(input: ResolveInput, profile: Profile): HostFacts {
  if (profile !== 'sqlite') return { platform: input.platform, sqliteVersion: null, sqliteDriverLoaded: true };
  const text = typeof input.sqliteVersion === 'function' ? input.sqliteVersion() : input.sqliteVersion;
  return { platform: input.platform, sqliteVersion: parseSqliteVersion(text), sqliteDriverLoaded: text !== null };
}

// ---------------------------------------------------------------------------
// Value rules (§2.2 text vs native types, §2.5)

function isText(picked: Picked): picked is Picked & { value: string } {
  return typeof picked.value === 'string';
}

function choice<T extends string>(picked: Picked, allowed: readonly T[], fallback: T, path: ConfigIssuePath): T {
  if (picked.source === 'default') return fallback;
  if (isText(picked) && (allowed as readonly string[]).includes(picked.value)) return picked.value as T;
  return reject(path);
}

function transportChoice(picked: Picked): Transport {
  if (picked.source === 'default') return 'stdio';
  if (isText(picked) && (TRANSPORTS as readonly string[]).includes(picked.value)) return picked.value as Transport;
  throw new Rejection(TRANSPORT_NOT_SUPPORTED);
}

interface IntegerRule {
  readonly min: number;
  readonly max: number;
  readonly fallback: number;
  readonly path: ConfigIssuePath;
}

/** CLI/env: canonical decimal text, no more digits than the maximum. TOML: a native integer. */
function integer(picked: Picked, rule: IntegerRule): number {
  let value: bigint;
  if (picked.source === 'default') return rule.fallback;
  if (picked.source === 'file') {
    if (typeof picked.value !== 'bigint') return reject(rule.path);
    value = picked.value;
  } else {
    if (!isText(picked) || !/^[1-9][0-9]*$/.test(picked.value) || picked.value.length > String(rule.max).length) {
      return reject(rule.path);
    }
    value = BigInt(picked.value);
  }
  if (value < BigInt(rule.min) || value > BigInt(rule.max)) return reject(rule.path);
  return Number(value);
}

/** CLI/env: exactly `true` or `false`. TOML: a native boolean. */
function boolean(picked: Picked, fallback: boolean, path: ConfigIssuePath): boolean {
  if (picked.source === 'default') return fallback;
  if (picked.source === 'file') return typeof picked.value === 'boolean' ? picked.value : reject(path);
  if (picked.value === 'true') return true;
  if (picked.value === 'false') return false;
  return reject(path);
}

function httpHost(picked: Picked): { text: string; isLoopback: boolean } {
  if (picked.source === 'default') return { text: '127.0.0.1', isLoopback: true };
  if (!isText(picked) || picked.value.length === 0 || hasSurroundingWhitespace(picked.value) || codePointLength(picked.value) > 45) {
    return reject('streamable_http');
  }
  const literal = parseIpLiteral(picked.value);
  return literal === null ? reject('streamable_http') : { text: literal.text, isLoopback: literal.isLoopback };
}

function httpPath(picked: Picked): string {
  if (picked.source === 'default') return '/mcp';
  return isText(picked) && isValidHttpPath(picked.value) ? picked.value : reject('streamable_http');
}

/** CLI/env: comma-separated text. TOML: an array of strings. */
function listEntries(picked: Picked): string[] {
  if (picked.source === 'file') {
    const value = picked.value;
    if (!Array.isArray(value) || !value.every((entry): entry is string => typeof entry === 'string')) return reject('streamable_http');
    return value;
  }
  if (!isText(picked) || picked.value.length === 0) return reject('streamable_http');
  return picked.value.split(',');
}

function hostList(picked: Picked, host: string, port: number): string[] {
  const entries = picked.source === 'default' ? defaultAllowedHosts(host, port) : listEntries(picked);
  if (picked.source !== 'default' && !isValidListShape(entries)) return reject('streamable_http');
  // The derived default is checked too: a zone-scoped IPv6 host cannot form a valid entry.
  return entries.every(isValidHostEntry) ? entries : reject('streamable_http');
}

function originList(picked: Picked): string[] {
  if (picked.source === 'default') return [];
  if (picked.source === 'file' && Array.isArray(picked.value) && picked.value.length === 0) return [];
  const entries = listEntries(picked);
  if (!isValidListShape(entries)) return reject('streamable_http');
  return entries.every(isValidOriginEntry) ? entries : reject('streamable_http');
}

/** Non-empty, ≤ 128 code points, no surrounding whitespace, printable in Python's sense. */
function principal(picked: Picked): string | null {
  if (picked.source === 'default') return null;
  if (!isText(picked)) return reject('principal_id');
  const text = picked.value;
  if (text.length === 0 || hasSurroundingWhitespace(text) || codePointLength(text) > 128 || !isPrintable(text)) {
    return reject('principal_id');
  }
  return text;
}

function dataRootValue(picked: Picked, platform: NodeJS.Platform): string | null {
  if (picked.source === 'default') return null;
  return isText(picked) && isValidDataRoot(picked.value, platform) ? picked.value : reject('sqlite');
}

function dsnReference(picked: Picked): string | null {
  if (picked.source === 'default') return null;
  return isText(picked) && /^[A-Z][A-Z0-9_]{0,127}$/.test(picked.value) ? picked.value : reject('postgresql');
}

// ---------------------------------------------------------------------------
// Runnability (§2.8)

export interface SqliteRuntimeReport {
  readonly detectedVersion: string | null;
  readonly minimumVersion: string;
  readonly supported: boolean;
}

export function sqliteRuntimeReport(config: ResolvedConfig): SqliteRuntimeReport {
  const detected = config.host.sqliteVersion;
  return {
    detectedVersion: detected === null ? null : formatSqliteVersion(detected),
    minimumVersion: SQLITE_MINIMUM_VERSION,
    supported: isSupportedSqliteVersion(detected),
  };
}

/** The runnability failure of a resolved configuration, or null if it can run here. */
export function runnabilityFailure(config: ResolvedConfig): ConfigErrorDocument | null {
  if (config.profile !== 'sqlite') return null;
  if (!isSupportedSqlitePlatform(config.host.platform)) return SQLITE_PLATFORM_UNSUPPORTED;
  if (!config.host.sqliteDriverLoaded) return sqliteDriverNotLoaded();
  const version = config.host.sqliteVersion;
  if (!isSupportedSqliteVersion(version)) return sqliteRuntimeUnsupported(version === null ? null : formatSqliteVersion(version));
  return null;
}

export function isRunnable(config: ResolvedConfig): boolean {
  return runnabilityFailure(config) === null;
}

interface RuntimeBase {
  readonly transport: Transport;
  readonly logLevel: LogLevel;
  readonly http: HttpSettings;
}

/** What `serve` and the admin commands compose from: one shape per profile, nothing optional left to check. */
export type RuntimeConfig =
  | (RuntimeBase & { readonly profile: 'stateless'; readonly principalId: string | null })
  | (RuntimeBase & {
      readonly profile: 'sqlite';
      readonly principalId: string;
      readonly sqlite: { readonly dataRoot: string; readonly dataRootExplicit: boolean; readonly busyTimeoutMs: number };
    })
  | (RuntimeBase & {
      readonly profile: 'postgresql';
      readonly principalId: string;
      readonly postgres: {
        readonly dsnEnv: string;
        readonly connectTimeoutSeconds: number;
        readonly lockTimeoutMs: number;
        readonly statementTimeoutMs: number;
      };
    });

export type RunnableOutcome =
  | { readonly ok: true; readonly runtime: RuntimeConfig }
  | { readonly ok: false; readonly error: ConfigErrorDocument };

/** §2.8 for `config validate`, `serve` and every admin command. */
export function requireRunnable(config: ResolvedConfig): RunnableOutcome {
  const failure = runnabilityFailure(config);
  if (failure !== null) return { ok: false, error: failure };
  const base: RuntimeBase = { transport: config.transport, logLevel: config.logLevel, http: config.http };
  if (config.profile === 'stateless') return { ok: true, runtime: { ...base, profile: 'stateless', principalId: config.principalId } };
  // The cross-rules guarantee these; a gap here would be a bug, reported as an internal error.
  if (config.principalId === null) return { ok: false, error: CONFIGURATION_INTERNAL_ERROR };
  if (config.profile === 'sqlite') {
    const { dataRoot, dataRootExplicit, busyTimeoutMs } = config.sqlite;
    if (dataRoot === null) return { ok: false, error: CONFIGURATION_INTERNAL_ERROR };
    return {
      ok: true,
      runtime: { ...base, profile: 'sqlite', principalId: config.principalId, sqlite: { dataRoot, dataRootExplicit, busyTimeoutMs } },
    };
  }
  const { dsnEnv, connectTimeoutSeconds, lockTimeoutMs, statementTimeoutMs } = config.postgres;
  if (dsnEnv === null) return { ok: false, error: CONFIGURATION_INTERNAL_ERROR };
  return {
    ok: true,
    runtime: {
      ...base,
      profile: 'postgresql',
      principalId: config.principalId,
      postgres: { dsnEnv, connectTimeoutSeconds, lockTimeoutMs, statementTimeoutMs },
    },
  };
}

/** Preflight, resolution and runnability in the order `serve` and `config validate` need them. */
export function resolveRunnableConfiguration(input: ResolveInput): RunnableOutcome {
  const preflight = transportPreflight(input.options, input.env);
  if (!preflight.ok) return preflight;
  const resolution = resolveConfiguration(input);
  if (!resolution.ok) return resolution;
  return requireRunnable(resolution.config);
}
