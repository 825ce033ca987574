// The one composition root of AIPCS: wires a runnable configuration to
// storage adapters, application services and the MCP edge for each profile.
// Any failure while composing is reported as the single start-up envelope
// (operations spec §1.6); nothing internal reaches the output.

import { createHash } from 'node:crypto';
import { systemClock, systemIds } from '../common/clock.js';
import { openFilesShortage } from '../common/launch.js';
import { createLogger, type Logger, type LogLevel as LoggerLevel } from '../common/logger.js';
import { createApplication, createOperator, type Application, type Operator, type OperatorStoragePorts, type StoragePorts } from './core/application.js';
import type { AdminContext } from './core/admin-reports.js';
import type { TransferCodec } from './core/transfer-codec.js';
import { AipcsError } from './contract/error-codes.js';
import { AIPCS_MCP_CONTRACT_VERSION } from './contract/server-info.js';
import { isBundleInvalidError, readBundle, summaryToJson, writeBundle } from './portable/index.js';
import { Utf8Sha256 } from './portable/text-digest.js';
import { PACKAGE_VERSION } from './version.js';
import type { LogLevel, RuntimeConfig } from './config/index.js';
import { isAcceptableDsn } from './storage/postgres/dsn.js';
import { PostgresRefusal } from './storage/postgres/failure-reason.js';
import { describeStorage, describeStorageFailure, storageFailureIn } from './storage/failure-reason.js';
import { checkSqliteDataRootText, openSqliteStorage, openSqliteStorageForAdmin } from './storage/sqlite/index.js';
import { UnsafeLocationError } from './storage/sqlite/location.js';
import { StorageFailure, type MigrationState } from './core/ports.js';
import { unavailableState } from './storage/shared/migration-state.js';

export const sha256Hex = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

const LOGGER_LEVELS: Record<LogLevel, LoggerLevel> = { debug: 'debug', info: 'info', warning: 'warn', error: 'error' };

/**
 * The PostgreSQL adapter, loaded only when a postgresql profile connects: the
 * driver is never imported by configuration commands or other profiles
 * (operations spec §2.10), and a missing driver surfaces as unavailable storage.
 */
async function postgresAdapter(): Promise<typeof import('./storage/postgres/index.js') | null> {
  try {
    return await import('./storage/postgres/index.js');
  } catch {
    return null;
  }
}

export function loggerFor(level: LogLevel): Logger {
  return createLogger('aipcs', LOGGER_LEVELS[level]);
}

/** Fault injection for crash tests: the named checkpoint kills the process outright. */
function faultCheckpoint(): ((name: string) => void) | undefined {
  const target = process.env['AIPCS_FAULT_INJECTION'];
  if (!target) return undefined;
  return (name) => {
    if (name === target) process.kill(process.pid, 'SIGKILL');
  };
}

/**
 * Test-only: `AIPCS_TEST_ANSWER_WAIT_MS={ms}` shortens how long the end of
 * stdin waits for the answers still owed (60 s), so a test of a client that
 * reads none of them does not wait a minute. Unset in normal use.
 */
const ANSWER_WAIT_ENV = 'AIPCS_TEST_ANSWER_WAIT_MS';

export class StartupError extends Error {
  constructor(options?: { cause?: unknown }) {
    super('Server could not be started safely.', options);
    this.name = 'StartupError';
  }
}

/**
 * One log line for a failure that is the server's, not the caller's: a
 * storage fault (a full disk, a database gone or damaged, a write whose
 * outcome is unknown) at warning level, an unexpected error at error level.
 * Contention, conflicts and refusals are answers the client acts on; they
 * are not logged. Fixed words only (§2.9): the client's envelope is the
 * contract's and says no more.
 */
export function reportFailure(logger: Logger, command: string, error: unknown): void {
  const failure = storageFailureIn(error);
  if (failure !== undefined) {
    if (failure.kind === 'unavailable' || failure.kind === 'incompatible' || failure.kind === 'uncertain') logger.warn(`${command}: ${describeStorageFailure(failure)}`);
    return;
  }
  if (!(error instanceof AipcsError) || error.code === 'internal_error') logger.error(`${command}: failed unexpectedly (${error instanceof Error ? error.name : typeof error})`);
}

/**
 * reportFailure for an administration command: at --log-level info or debug
 * only, because its stderr carries exactly one line, the error envelope
 * (operations spec §1.3), unless the operator asks for more.
 */
export function reportAdminFailure(level: LogLevel, command: string, error: unknown): void {
  const logger = loggerFor(level);
  const quiet: Logger = { ...logger, warn: logger.info, error: logger.info };
  // Composition refused the root or the DSN: the same words as serve's start-up refusal.
  if (error instanceof AdminStorageUnavailable) quiet.warn(`${command}: ${describeStorage('unavailable', error.cause)}`);
  else reportFailure(quiet, command, error);
}

function startupReason(error: unknown): string {
  if (error instanceof UnsafeLocationError) return error.message;
  if (error instanceof StorageFailure) return describeStorageFailure(error);
  return 'storage could not be opened';
}

const DSN_UNSET = 'the DSN variable is not set';
const DSN_UNACCEPTABLE = 'the DSN variable holds no acceptable DSN (blank, NUL or too long)';
const DRIVER_MISSING = 'the PostgreSQL driver is not installed';

/** Opens the backend of a persistent profile (migrating the registry, as only `serve` does). */
export async function openStorage(runtime: RuntimeConfig): Promise<StoragePorts | null> {
  switch (runtime.profile) {
    case 'stateless':
      return null;
    case 'sqlite':
      return openSqliteStorage({
        dataRoot: runtime.sqlite.dataRoot,
        busyTimeoutMs: runtime.sqlite.busyTimeoutMs,
        defaultRoot: !runtime.sqlite.dataRootExplicit,
      });
    case 'postgresql': {
      // The DSN is read once, here, from the variable the operator named; it
      // never appears in output, logs or errors.
      const dsn = process.env[runtime.postgres.dsnEnv];
      if (dsn === undefined) throw new StorageFailure('unavailable', { cause: new PostgresRefusal(DSN_UNSET) });
      if (!isAcceptableDsn(dsn)) throw new StorageFailure('unavailable', { cause: new PostgresRefusal(DSN_UNACCEPTABLE) });
      const adapter = await postgresAdapter();
      if (adapter === null) throw new StorageFailure('unavailable', { cause: new PostgresRefusal(DRIVER_MISSING) });
      return adapter.openPostgresStorage({
        dsn,
        connectTimeoutSeconds: runtime.postgres.connectTimeoutSeconds,
        lockTimeoutMs: runtime.postgres.lockTimeoutMs,
        statementTimeoutMs: runtime.postgres.statementTimeoutMs,
      });
    }
  }
}

export function applicationOver(storage: StoragePorts, principalId: string, createdVia: 'mcp' | 'cli'): Application {
  const clock = systemClock();
  const checkpoint = faultCheckpoint();
  return createApplication(storage, {
    principalId,
    createdVia,
    nowMicros: () => clock.nowMicros(),
    uuid: () => systemIds.uuid(),
    sha256: sha256Hex,
    ...(checkpoint ? { checkpoint } : {}),
  });
}

/**
 * The MCP edge's modules. Node reads a module graph's files all at once, and
 * the SDK's (its schema library's locales) take about 150 descriptors: under
 * a lower open files limit the load fails, for good in this process.
 */
async function loadServeEdge(logger: Logger): Promise<typeof import('./serve-edge.js')> {
  try {
    return await import('./serve-edge.js');
  } catch (error) {
    const shortage = openFilesShortage(error);
    logger.info(`start-up refused: the server's modules could not be loaded${shortage === null ? '' : `: ${shortage}`}`);
    throw new StartupError({ cause: error });
  }
}

/**
 * Composes and serves until the client goes away. Resolves with the exit
 * status; throws StartupError when composition fails (nothing was served).
 */
export async function serve(runtime: RuntimeConfig): Promise<number> {
  const logger = loggerFor(runtime.logLevel);
  // The MCP edge is loaded here, not with this module: the administration
  // commands (export, import, status...) never serve and start faster without it.
  const { AIPCS_TOOLS, STATELESS_TOOLS, aipcsServerOptions, createDispatcher, httpExposureAllowed, serveAipcsHttp, serveStdio, SHUTDOWN_SIGNALS, testAnswerWaitMs } = await loadServeEdge(logger);
  // Refused before storage is opened (and again where the socket is bound).
  if (runtime.transport === 'streamable-http' && !httpExposureAllowed(runtime.http)) throw new StartupError();
  let storage: StoragePorts | null;
  try {
    storage = await openStorage(runtime);
  } catch (error) {
    // The reason is a fixed text (never a path or driver message), shown
    // only at --log-level info or debug so the contract's output stays exact.
    logger.info(`start-up refused: ${startupReason(error)}`);
    throw new StartupError({ cause: error });
  }
  try {
    const app = storage && runtime.profile !== 'stateless' ? applicationOver(storage, runtime.principalId, 'mcp') : null;
    // The tools a profile exposes; the persistent catalogue is the contract's 21.
    const tools = app ? AIPCS_TOOLS : STATELESS_TOOLS;
    const server = aipcsServerOptions(tools, createDispatcher(app, tools, (tool, error) => reportFailure(logger, tool, error)), logger);
    if (runtime.transport === 'streamable-http') {
      // Until SIGINT/SIGTERM/SIGHUP; a listener that cannot start is a start-up failure.
      await serveAipcsHttp(runtime.http, server, logger, (cause) => new StartupError({ cause }));
      return 0;
    }
    // Until stdin ends, or SIGINT/SIGTERM/SIGHUP (calls already read are answered first).
    const answerWaitMs = testAnswerWaitMs(process.env, ANSWER_WAIT_ENV);
    const session = await serveStdio(server, {
      shutdownSignals: SHUTDOWN_SIGNALS,
      ...(answerWaitMs === undefined ? {} : { answerWaitMs }),
    });
    // Answers lost to a failing stdout (a full disk, an I/O error) are a
    // failure while running (§1.6), not a session the client ended.
    if (session.outputError !== undefined) {
      logger.warn(`stdout could not be written (${session.outputError}); the session ended`);
      throw new StartupError();
    }
    // So is an input that could not be read (a folder, an fd opened for
    // writing): no client ended this session, and a supervisor must see it.
    if (session.inputError !== undefined) {
      logger.warn(`stdin could not be read (${session.inputError}); the session ended`);
      throw new StartupError();
    }
    return 0;
  } finally {
    await storage?.close();
  }
}

// ---------------------------------------------------------------------------
// Admin composition (operations spec §1.8-1.9): the `aipcs` administration
// commands inspect storage without migrating it and, when the registry is
// ready, get the operator services over it. Nothing here creates a data root.

/** Composition refused storage (an unset DSN variable, a root the location policy rejects): storage_unavailable. */
export class AdminStorageUnavailable extends Error {
  constructor(options?: { cause?: unknown }) {
    super('Storage is unavailable.', options);
    this.name = 'AdminStorageUnavailable';
  }
}

export interface AdminComposition {
  readonly context: AdminContext;
  /** The operator services; null unless the registry is ready. */
  readonly operator: Operator | null;
  close(): Promise<void>;
}

/** The portable codec behind core's transfer port; the compiler checks the shapes agree. */
export const TRANSFER_CODEC: TransferCodec = {
  write: (content, sink) => writeBundle(content, sink),
  read: (open) => readBundle(open),
  summaryJson: (summary) => summaryToJson(summary),
  textDigest: () => new Utf8Sha256(),
  exceedsLimits: (error) => isBundleInvalidError(error) && (error.reason === 'bundle_too_large' || error.reason === 'too_many_lines'),
  lineTooLong: (error) => isBundleInvalidError(error) && error.reason === 'line_too_long',
  unrepresentable: (error) => isBundleInvalidError(error) && error.reason === 'integer_out_of_range',
};

function operatorOver(storage: OperatorStoragePorts, principalId: string): Operator {
  const clock = systemClock();
  const checkpoint = faultCheckpoint();
  return createOperator(storage, {
    principalId,
    createdVia: 'cli',
    nowMicros: () => clock.nowMicros(),
    uuid: () => systemIds.uuid(),
    sha256: sha256Hex,
    ...(checkpoint ? { checkpoint } : {}),
    codec: TRANSFER_CODEC,
    producer: { packageVersion: PACKAGE_VERSION, mcpContract: AIPCS_MCP_CONTRACT_VERSION },
  });
}

/**
 * Opens storage for an admin command. Read-only commands (`writable: false`)
 * use read-only connections; operator commands get a writable registry, but
 * only one that is already ready. Throws AdminStorageUnavailable when
 * composition must refuse.
 */
export async function openStorageForAdmin(runtime: RuntimeConfig, mode: { readonly writable: boolean }): Promise<AdminComposition> {
  if (runtime.profile === 'stateless') {
    const context: AdminContext = { profile: 'stateless', backend: null, registry: null, storage: null, lifecycle: null, principalId: runtime.principalId };
    return { context, operator: null, close: async () => undefined };
  }
  let opened: { readonly registry: MigrationState; readonly ports: OperatorStoragePorts | null };
  if (runtime.profile === 'postgresql') {
    // An unreachable server or unsupported version shows as an unavailable registry.
    const dsn = adminDsn(runtime);
    const { connectTimeoutSeconds, lockTimeoutMs, statementTimeoutMs } = runtime.postgres;
    const adapter = await postgresAdapter();
    opened =
      adapter === null
        ? { registry: unavailableState(new PostgresRefusal(DRIVER_MISSING)), ports: null }
        : await adapter.openPostgresStorageForAdmin({ dsn, connectTimeoutSeconds, lockTimeoutMs, statementTimeoutMs }, mode);
  } else {
    try {
      opened = await openSqliteStorageForAdmin({ dataRoot: runtime.sqlite.dataRoot, busyTimeoutMs: runtime.sqlite.busyTimeoutMs, defaultRoot: !runtime.sqlite.dataRootExplicit }, mode);
    } catch (error) {
      // A root the location policy's textual rules reject.
      throw new AdminStorageUnavailable({ cause: error });
    }
  }
  const storage = opened.ports;
  const operator = storage ? operatorOver(storage, runtime.principalId) : null;
  const context: AdminContext = {
    profile: runtime.profile,
    backend: runtime.profile,
    registry: opened.registry,
    storage,
    lifecycle: operator?.application.lifecycle ?? null,
    principalId: runtime.principalId,
  };
  return { context, operator, close: async () => storage?.close() };
}

/** The DSN of the configured variable, read once; it never reaches output, logs or errors. */
function adminDsn(runtime: RuntimeConfig & { profile: 'postgresql' }): string {
  const dsn = process.env[runtime.postgres.dsnEnv];
  if (dsn === undefined) throw new AdminStorageUnavailable({ cause: new PostgresRefusal(DSN_UNSET) });
  if (!isAcceptableDsn(dsn)) throw new AdminStorageUnavailable({ cause: new PostgresRefusal(DSN_UNACCEPTABLE) });
  return dsn;
}

/**
 * Composition without storage, for an import dry run (which needs no
 * registry and opens none): the same refusals as openStorageForAdmin for an
 * unset or unacceptable DSN variable and for a SQLite root the location
 * policy's textual rules reject, so that a dry run does not pass where the
 * import would be refused before reading a byte of storage (spec §1.5, §1.8).
 */
export function checkAdminComposition(runtime: RuntimeConfig): void {
  if (runtime.profile === 'postgresql') {
    adminDsn(runtime);
  } else if (runtime.profile === 'sqlite') {
    try {
      checkSqliteDataRootText({ dataRoot: runtime.sqlite.dataRoot });
    } catch (error) {
      throw new AdminStorageUnavailable({ cause: error });
    }
  }
}
