// The configuration error envelope of operations spec §2.11: fixed codes,
// messages and issue texts, one issue naming the failing area. Never holds a
// value, path, variable name or TOML text, so nothing here can leak input.

/** Where a configuration problem lies; the only paths an issue may carry. */
export type ConfigIssuePath =
  | 'configuration'
  | 'config_version'
  | 'identity'
  | 'sqlite'
  | 'postgresql'
  | 'logging'
  | 'streamable_http'
  | 'profile'
  | 'transport'
  | 'principal_id'
  | 'log_level'
  | 'storage'
  | 'sqlite_platform'
  | 'sqlite_runtime';

export type ConfigIssueCode = 'invalid_configuration' | 'profile_unavailable' | 'sqlite_platform_unsupported' | 'sqlite_runtime_unsupported';

export type ConfigErrorCode = 'validation_failed' | 'transport_not_supported' | 'unsupported_operation' | 'internal_error';

export interface ConfigIssue {
  readonly code: ConfigIssueCode;
  readonly path: ConfigIssuePath;
  readonly message: string;
  readonly remediation: string | null;
}

/** Structurally the CLI error document (cli/error-document.ts); keys in envelope order. */
export interface ConfigErrorDocument {
  readonly code: ConfigErrorCode;
  readonly message: string;
  readonly issues: readonly ConfigIssue[];
  readonly retryable: false;
}

export const SQLITE_MINIMUM_VERSION = '3.51.3';

export function invalidConfiguration(path: ConfigIssuePath): ConfigErrorDocument {
  return {
    code: 'validation_failed',
    message: 'Configuration failed public validation.',
    issues: [
      {
        code: 'invalid_configuration',
        path,
        message: 'The configuration value is invalid or unavailable.',
        remediation: 'Use a documented value and retry.',
      },
    ],
    retryable: false,
  };
}

/** A fixed refusal without issues, frozen so that no caller can change the shared document. */
function fixedRefusal(code: ConfigErrorCode, message: string): ConfigErrorDocument {
  return Object.freeze({ code, message, issues: Object.freeze([]) as readonly ConfigIssue[], retryable: false }) as ConfigErrorDocument;
}

/** The preflight's refusal (ops spec §2.3), in the reference CLI's words. */
export const LEGACY_LISTENER_REFUSED = fixedRefusal('transport_not_supported', 'Use documented AIPCS transport configuration; legacy listener settings are disabled.');

/** An invalid resolved transport (from AIPCS_TRANSPORT or the file), in the reference's words for that path. */
export const TRANSPORT_NOT_SUPPORTED = fixedRefusal('transport_not_supported', 'The selected transport is not supported by the documented configuration.');

export const SQLITE_PLATFORM_UNSUPPORTED: ConfigErrorDocument = Object.freeze({
  code: 'unsupported_operation',
  message: 'SQLite storage is unavailable on this platform.',
  issues: Object.freeze([
    Object.freeze({
      code: 'sqlite_platform_unsupported',
      path: 'sqlite_platform',
      message: 'SQLite storage is supported only on Linux or macOS local POSIX filesystems.',
      remediation: 'Use the PostgreSQL profile or a supported SQLite host.',
    }),
  ]) as readonly ConfigIssue[],
  retryable: false,
}) as ConfigErrorDocument;

/**
 * The runtime floor failure. `detected` must already be a validated `x.y.z`
 * (digits and dots only) or null; nothing else reaches the message.
 */
export function sqliteRuntimeUnsupported(detected: string | null): ConfigErrorDocument {
  const shown = detected !== null && /^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$/.test(detected) ? detected : 'an unrecognised version';
  return sqliteRuntimeFailure(
    `Detected SQLite ${shown}; SQLite ${SQLITE_MINIMUM_VERSION} or newer is required.`,
    `Use a runtime whose SQLite library is ${SQLITE_MINIMUM_VERSION} or newer, or select the PostgreSQL profile. See the SQLite troubleshooting guidance.`,
  );
}

/**
 * No SQLite to ask: better-sqlite3's native module did not load (its install
 * script was skipped, or it was built for another Node.js). A rebuild mends
 * it, a newer SQLite would not, so the remediation says so.
 */
export function sqliteDriverNotLoaded(): ConfigErrorDocument {
  return sqliteRuntimeFailure(
    `Detected no SQLite: the better-sqlite3 native module did not load; SQLite ${SQLITE_MINIMUM_VERSION} or newer is required.`,
    'Rebuild it for this Node.js (`npm rebuild better-sqlite3`; npm 12 runs its install script only when allowScripts approves it), or select the PostgreSQL profile.',
  );
}

function sqliteRuntimeFailure(message: string, remediation: string): ConfigErrorDocument {
  return {
    code: 'unsupported_operation',
    message: `SQLite storage requires SQLite ${SQLITE_MINIMUM_VERSION} or newer because older runtimes contain the WAL-reset data-integrity defect.`,
    issues: [{ code: 'sqlite_runtime_unsupported', path: 'sqlite_runtime', message, remediation }],
    retryable: false,
  };
}

/** Anything unexpected while resolving: no issues, no detail. */
export const CONFIGURATION_INTERNAL_ERROR = fixedRefusal('internal_error', 'Configuration could not be processed safely.');
