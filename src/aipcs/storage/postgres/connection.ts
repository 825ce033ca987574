// PostgreSQL connections for every AIPCS unit of work: one pool per opened
// storage, session settings applied and verified on each new connection, the
// server version floor (16-18), and the one place where driver errors become
// StorageFailure kinds. Owns no SQL about tables; must never let the DSN (or
// any text derived from it) reach an error, a log line or an output.

import pg from 'pg';
import { errorCode } from '../../../common/errors.js';
import { StorageFailure } from '../../core/ports.js';
import { driverConnectionString } from './conninfo.js';
import { isAcceptableDsn } from './dsn.js';
import { PostgresErrorSummary, PostgresRefusal } from './failure-reason.js';

// DSN rules of ops spec §3.3.1 are checked before the driver ever sees the string.
export { isAcceptableDsn, MAXIMUM_DSN_LENGTH } from './dsn.js';
export { PostgresErrorSummary } from './failure-reason.js';

/** `server_version_num` bounds: majors 16, 17 and 18 only. */
export const MINIMUM_SERVER_VERSION_NUM = 160000;
export const MAXIMUM_SERVER_VERSION_NUM = 189999;


export interface PostgresConnectionOptions {
  readonly dsn: string;
  readonly connectTimeoutSeconds: number;
  readonly lockTimeoutMs: number;
  readonly statementTimeoutMs: number;
  /** Pool size; the default suits one serving process. */
  readonly maxConnections?: number;
  /** Admin inspection: every unit is READ ONLY, so nothing can be written. */
  readonly readOnly?: boolean;
}

/** pg-pool's error for a unit that waited its whole connect timeout in the queue for a pooled connection. */
const POOL_WAIT_TIMEOUT = 'timeout exceeded when trying to connect';

/** too_many_connections: the server, the database or the role has no connection slot left. */
const NO_FREE_SLOT = '53300';

/** The SQLSTATEs that mean "contended, try again": serialization, deadlock, lock_timeout, statement_timeout. */
const BUSY_SQLSTATES = new Set(['40001', '40P01', '55P03', '57014']);

/** pg's error for a statement that got no answer within query_timeout (the server or network stopped answering). */
const QUERY_READ_TIMEOUT = 'Query read timeout';

/** admin_shutdown, crash_shutdown, idle_session_timeout, idle_in_transaction_session_timeout: always FATAL. */
const SESSION_ENDING_SQLSTATES = new Set(['57P01', '57P02', '57P05', '25P03']);

/**
 * Server message classes whose text may name the login role or database
 * (connection, authorisation, catalog): their text is dropped from causes.
 */
const SENSITIVE_CLASSES = new Set(['08', '28', '3D']);

function summarise(error: unknown): PostgresErrorSummary {
  if (error instanceof pg.DatabaseError) {
    const sqlstate = typeof error.code === 'string' ? error.code : null;
    const sensitive = sqlstate === null || SENSITIVE_CLASSES.has(sqlstate.slice(0, 2));
    return new PostgresErrorSummary(sqlstate, error.constraint ?? null, sensitive ? `postgresql server error ${sqlstate ?? 'without sqlstate'}` : error.message);
  }
  const code = errorCode(error);
  const clientCode = code !== undefined && /^[A-Z0-9_]{1,40}$/.test(code) ? code : null;
  return new PostgresErrorSummary(null, null, `postgresql client error${clientCode === null ? '' : ` ${clientCode}`}`, clientCode);
}

/**
 * A server error that ends the session (backend terminated or shut down), by
 * SQLSTATE since the severity text may be translated.
 */
function endsSession(error: pg.DatabaseError): boolean {
  return error.severity === 'FATAL' || error.severity === 'PANIC' || SESSION_ENDING_SQLSTATES.has(error.code ?? '');
}

/** Whether the session still answers a statement (within the query timeout). */
async function sessionAnswers(client: pg.PoolClient): Promise<boolean> {
  try {
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  }
}

/** The connection went (closed, reset, or the server ended the session), not a statement that failed or timed out on it. */
function lostWhileIdle(error: unknown): boolean {
  if (error instanceof pg.DatabaseError) return endsSession(error);
  return error instanceof Error && error.message !== QUERY_READ_TIMEOUT;
}

/** Maps any driver error to a StorageFailure whose cause carries no connection details. */
export function toStorageFailure(error: unknown): StorageFailure {
  if (error instanceof StorageFailure) return error;
  const cause = summarise(error);
  if (error instanceof pg.DatabaseError && cause.sqlstate !== null) {
    if (BUSY_SQLSTATES.has(cause.sqlstate)) return new StorageFailure('busy', { cause });
    if (cause.sqlstate.startsWith('23')) return new StorageFailure('constraint', { cause });
  }
  return new StorageFailure('unavailable', { cause });
}


// int8 values (counts, versions, sequences, microsecond timestamps) must stay
// exact: parse them as BigInt instead of the driver's default string.
const INT8_OID = 20;
const typeParsers: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: string) => {
    if (oid === INT8_OID && format !== 'binary') return (text: string) => BigInt(text);
    return pg.types.getTypeParser(oid, format as 'text');
  }) as pg.CustomTypesConfig['getTypeParser'],
};

/** One statement runner bound to the client of a unit of work; every driver error leaves as a StorageFailure. */
export class PgSession {
  /** Set when the connection itself failed, so that it is discarded rather than reused. */
  broken = false;

  constructor(private readonly client: pg.PoolClient) {}

  async rows<R>(sql: string, params: readonly unknown[] = []): Promise<R[]> {
    return (await this.exec(sql, params)).rows as R[];
  }

  /** rows() as arrays of column values in select-list order (the driver's array row mode): no object with named properties per row. */
  async arrayRows(sql: string, params: readonly unknown[] = []): Promise<unknown[][]> {
    return (await this.exec(sql, params, 'array')).rows as unknown[][];
  }

  async first<R>(sql: string, params: readonly unknown[] = []): Promise<R | undefined> {
    return (await this.exec(sql, params)).rows[0] as R | undefined;
  }

  /** Runs a statement and returns how many rows it touched. */
  async run(sql: string, params: readonly unknown[] = []): Promise<number> {
    return (await this.exec(sql, params)).rowCount ?? 0;
  }

  private async exec(sql: string, params: readonly unknown[], rowMode?: 'array'): Promise<pg.QueryResult> {
    try {
      if (rowMode !== undefined) return await this.client.query({ text: sql, values: params as unknown[], rowMode });
      return await this.client.query(sql, params as unknown[]);
    } catch (error) {
      if (!(error instanceof pg.DatabaseError)) this.broken = true;
      throw toStorageFailure(error);
    }
  }
}

export type TransactionMode = 'read' | 'write';

const BEGIN: Record<TransactionMode | 'write_refused', string> = {
  // Reads see one snapshot for the whole unit.
  read: 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY',
  // Writers serialise through advisory locks taken before they read, and
  // READ COMMITTED lets every statement after the lock see the latest commits.
  write: 'BEGIN ISOLATION LEVEL READ COMMITTED READ WRITE',
  // A read-only opening: the server refuses any write the unit attempts.
  write_refused: 'BEGIN ISOLATION LEVEL READ COMMITTED READ ONLY',
};

interface SessionFacts {
  server_version_num: string;
  server_encoding: string;
  client_encoding: string;
}

/** The start of the warning node-postgres emits for sslmode prefer, require and verify-ca. */
const DRIVER_SSL_WARNING = 'SECURITY WARNING: The SSL modes';

/**
 * node-postgres parses the DSN again for every connection it opens, and on
 * the first parse of an sslmode of prefer, require or verify-ca it emits a
 * nine-line warning (process.emitWarning, once per process) that Node prints
 * on stderr: driver text, which operations spec §2.9 keeps out of every
 * output, on the stderr where an admin command prints one error line or
 * nothing. The DSN is parsed once here with that one warning held back; the
 * driver's once-per-process flag keeps it quiet after. Returns why the
 * driver cannot read it, or undefined. What the modes mean
 * with this driver is in docs/postgresql.md.
 */
function parseWithoutSslWarning(connectionString: string): string | undefined {
  const emitWarning = process.emitWarning;
  const filtered = (warning: string | Error, ...rest: unknown[]): void => {
    if ((typeof warning === 'string' ? warning : warning.message).startsWith(DRIVER_SSL_WARNING)) return;
    Reflect.apply(emitWarning, process, [warning, ...rest]);
  };
  process.emitWarning = filtered as typeof process.emitWarning;
  try {
    new pg.Client({ connectionString });
    return undefined;
  } catch (error) {
    // Every connection would fail the same way; the error's text may quote the DSN.
    return dsnParseFailureReason(error);
  } finally {
    process.emitWarning = emitWarning;
  }
}

/**
 * Why the driver could not read a DSN, in fixed words: a URI it cannot parse
 * (most often a password holding `#`, `/`, `?` or `@` not percent-encoded),
 * or a TLS file the DSN names that cannot be read (the driver reads
 * sslrootcert, sslcert and sslkey as it parses).
 */
function dsnParseFailureReason(error: unknown): string {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  if (code === 'ERR_INVALID_URL' || error instanceof TypeError) {
    return 'the DSN is not a valid URI (percent-encode #, /, ?, @ and : in the user name or password)';
  }
  if (typeof code === 'string' && code.startsWith('E')) return 'a TLS file the DSN names (sslrootcert, sslcert, sslkey) cannot be read';
  return 'the DSN could not be read';
}

/**
 * A pool over one DSN. Connections are opened lazily; each new one gets its
 * session settings pinned and the server checked before it runs any work.
 */
export class PostgresConnection {
  private readonly pool: pg.Pool;
  private readonly prepared = new WeakSet<pg.PoolClient>();
  /** Prepared connections still in the pool (checked out or idle). */
  private readonly live = new Set<pg.PoolClient>();
  /** Units waiting for a connection slot, woken when a pooled connection is released or removed. */
  private readonly waiting = new Set<() => void>();
  private readonly max: number;
  private closed = false;
  private versionNum: number | undefined;

  constructor(private readonly options: PostgresConnectionOptions) {
    if (!isAcceptableDsn(options.dsn)) throw new StorageFailure('unavailable');
    this.max = options.maxConnections ?? 10;
    const driverDsn = driverConnectionString(options.dsn);
    if (!driverDsn.ok) throw new StorageFailure('unavailable', { cause: new PostgresRefusal(driverDsn.reason) });
    const connectionString = driverDsn.text;
    const unreadable = parseWithoutSslWarning(connectionString);
    if (unreadable !== undefined) throw new StorageFailure('unavailable', { cause: new PostgresRefusal(unreadable) });
    this.pool = new pg.Pool({
      // libpq's keyword/value form too (host=… dbname=…), which the driver would misread as a URL.
      connectionString,
      connectionTimeoutMillis: options.connectTimeoutSeconds * 1000,
      // Startup options apply before the first statement; they are set again
      // and verified after connecting, since a DSN's own `options` wins here.
      options: [
        '-c search_path=pg_catalog,pg_temp',
        '-c TimeZone=UTC',
        '-c client_encoding=UTF8',
        // Any positive value gives float8 text output that reads back exactly (0 rounds to 15 digits).
        '-c extra_float_digits=1',
        // The catalog renders index and constraint definitions for the layout
        // signatures, which are shared across connections (catalog.ts): they
        // must not depend on who connected when.
        '-c quote_all_identifiers=off',
        // Import staging sends batches as arrays holding NULLs; with array_nulls
        // off each NULL element reads as the text 'NULL' (a string field of
        // that text, a history before_json that is not JSON).
        '-c array_nulls=on',
        // The pool closes idle connections itself; a server that ends one
        // first races the next unit that takes it (storage_unavailable).
        '-c idle_session_timeout=0',
        // A client host that vanishes mid-unit (power loss, a partition) keeps
        // its transaction, and the service's write lock, until the server
        // finds the socket dead: after two hours of silence by the kernel's
        // default. The backend probes after 60 s instead, every 10 s, and gives
        // up after 6 unanswered probes. Unix-domain sockets ignore these.
        '-c tcp_keepalives_idle=60',
        '-c tcp_keepalives_interval=10',
        '-c tcp_keepalives_count=6',
        `-c lock_timeout=${options.lockTimeoutMs}ms`,
        `-c statement_timeout=${options.statementTimeoutMs}ms`,
      ].join(' '),
      application_name: 'aipcs',
      // statement_timeout is enforced by the server, so it cannot end a wait
      // on a server or network that stopped answering. This client-side bound
      // comes after it (the server's own timeout wins whenever it can fire);
      // the statement then fails as a lost connection (COMMIT: uncertain).
      query_timeout: options.statementTimeoutMs + options.connectTimeoutSeconds * 1000,
      keepAlive: true,
      max: this.max,
      idleTimeoutMillis: 10_000,
      allowExitOnIdle: true,
      types: typeParsers,
    });
    // An idle connection that dies (server restart, network) must not crash
    // the process; the next acquisition opens a fresh one.
    this.pool.on('error', () => undefined);
    // pg-pool listens for a client's errors only while it is idle, and hands
    // a new client out with no listener from inside the socket read that
    // completed its start-up: a FATAL in the same packet (a backend
    // terminated right after starting) was an unhandled 'error' event that
    // ended the process. 'connect' is emitted before that hand-out. The
    // client's failure still reaches the unit through its first query, and
    // the client is discarded.
    this.pool.on('connect', (client) => client.on('error', () => undefined));
    this.pool.on('release', () => this.wake());
    this.pool.on('remove', (client) => {
      this.live.delete(client);
      this.wake();
    });
  }

  private wake(): void {
    for (const resolve of this.waiting) resolve();
    this.waiting.clear();
  }

  /** Resolves when a pooled connection is released or removed, or at `deadline` (epoch ms). */
  private async nextRelease(deadline: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    let woken!: () => void;
    await new Promise<void>((resolve) => {
      woken = resolve;
      this.waiting.add(woken);
      timer = setTimeout(resolve, Math.max(0, deadline - Date.now()));
    });
    clearTimeout(timer);
    this.waiting.delete(woken);
  }

  /**
   * pool.connect(), except that a server with no connection slot left for
   * another connection (its max_connections or the role's or database's
   * CONNECTION LIMIT reached, by other clients or by this pool itself, or
   * only counted so while several connections start at once) is waited out
   * within the connect timeout, as a full pool is: the unit tries again when
   * one of the pool's connections is released, and after a short pause
   * otherwise. Still none then: busy while the pool holds connections of its
   * own (they are the contention), unavailable when it holds none.
   */
  private async poolConnect(): Promise<pg.PoolClient> {
    const deadline = Date.now() + this.options.connectTimeoutSeconds * 1000;
    for (let pause = 25; ; pause = Math.min(pause * 2, 500)) {
      try {
        return await this.pool.connect();
      } catch (error) {
        if (!(error instanceof pg.DatabaseError) || error.code !== NO_FREE_SLOT) throw error;
        if (Date.now() >= deadline) throw this.live.size > 0 ? new StorageFailure('busy', { cause: summarise(error) }) : error;
        await this.nextRelease(Math.min(deadline, Date.now() + pause));
      }
    }
  }

  /** A connection from the pool, and whether it had served units before (false: opened and prepared just now). */
  private async acquire(): Promise<{ client: pg.PoolClient; reused: boolean }> {
    if (this.closed) throw new StorageFailure('unavailable');
    let client: pg.PoolClient;
    try {
      client = await this.poolConnect();
    } catch (error) {
      // Waiting for a pooled connection that every other unit holds is
      // contention, not an outage. Only pg-pool's queue timeout says so: a
      // connection that could not be opened is unavailable even while other
      // units fill the pool (as they all do when the server is down).
      const waited = !(error instanceof pg.DatabaseError) && error instanceof Error && error.message === POOL_WAIT_TIMEOUT;
      throw waited ? new StorageFailure('busy', { cause: summarise(error) }) : toStorageFailure(error);
    }
    if (this.prepared.has(client)) return { client, reused: true };
    try {
      // An explicit transaction: a role whose defaults are serializable,
      // read-only and deferrable would otherwise make this first statement
      // wait for a safe snapshot behind any serializable writer on the server
      // (every later unit names its own isolation level and access mode).
      await client.query(BEGIN.read);
      // Qualified: until it runs, the search_path is whatever a DSN's options said.
      // transaction_timeout (PostgreSQL 17+) would end a unit that waits within
      // lock_timeout or statement_timeout as unavailable instead of busy.
      const facts = await client.query<SessionFacts>(
        `SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', false) AS search_path,
                pg_catalog.set_config('TimeZone', 'UTC', false) AS time_zone,
                pg_catalog.set_config('extra_float_digits', '1', false) AS extra_float_digits,
                pg_catalog.set_config('quote_all_identifiers', 'off', false) AS quote_all_identifiers,
                pg_catalog.set_config('array_nulls', 'on', false) AS array_nulls,
                pg_catalog.set_config('idle_session_timeout', '0', false) AS idle_session_timeout,
                CASE WHEN pg_catalog.current_setting('transaction_timeout', true) IS NOT NULL
                     THEN pg_catalog.set_config('transaction_timeout', '0', false) END AS transaction_timeout,
                pg_catalog.set_config('lock_timeout', $1, false) AS lock_timeout,
                pg_catalog.set_config('statement_timeout', $2, false) AS statement_timeout,
                pg_catalog.current_setting('server_version_num') AS server_version_num,
                pg_catalog.current_setting('server_encoding') AS server_encoding,
                pg_catalog.current_setting('client_encoding') AS client_encoding`,
        [`${this.options.lockTimeoutMs}ms`, `${this.options.statementTimeoutMs}ms`],
      );
      // A session-level set_config outlives its transaction only once that commits (a rollback reverts it).
      await client.query('COMMIT');
      const row = facts.rows[0];
      const version = Number(row?.server_version_num);
      // Text must reach the server as UTF-8 and be stored as UTF-8, or strings would not round-trip.
      if (!row || !Number.isInteger(version) || version < MINIMUM_SERVER_VERSION_NUM || version > MAXIMUM_SERVER_VERSION_NUM || row.server_encoding !== 'UTF8' || row.client_encoding !== 'UTF8') {
        throw new StorageFailure('unavailable', { cause: new PostgresRefusal('the server is not PostgreSQL 16, 17 or 18 with UTF8 encoding') });
      }
      this.versionNum = version;
    } catch (error) {
      client.release(true);
      throw toStorageFailure(error);
    }
    this.prepared.add(client);
    this.live.add(client);
    return { client, reused: false };
  }

  /**
   * Takes a connection and opens the unit's transaction on it. A pooled
   * connection that died while idle without the pool noticing (its server
   * restarted or failed over, or a peer dropped it, and no close reached us)
   * fails this first statement; nothing of the unit has run on it, so it is
   * discarded and the unit takes another connection instead of failing an
   * avoidable request as unavailable. Only a reused connection that was lost
   * is replaced, at most once per pooled connection: a fresh one that fails,
   * a BEGIN that got no answer within the timeouts, or any other server
   * error ends the unit as before.
   */
  private async begin(mode: TransactionMode, opening: string | undefined): Promise<{ client: pg.PoolClient; session: PgSession; opened: unknown[] }> {
    const statement = BEGIN[mode === 'write' && this.options.readOnly === true ? 'write_refused' : mode];
    for (let replaced = 0; ; replaced++) {
      const { client, reused } = await this.acquire();
      try {
        // Without parameters: the simple query protocol runs every statement of the text, in one round trip.
        const results = (await client.query(opening === undefined ? statement : `${statement}; ${opening}`)) as unknown as pg.QueryResult | pg.QueryResult[];
        return { client, session: new PgSession(client), opened: Array.isArray(results) ? (results[results.length - 1]?.rows ?? []) : [] };
      } catch (error) {
        // The opening failed in an open transaction (a missing table, say): the connection itself is fine.
        if (opening !== undefined && error instanceof pg.DatabaseError && !endsSession(error)) {
          const session = new PgSession(client);
          await this.rollback(client, session);
          client.release(session.broken);
          throw toStorageFailure(error);
        }
        client.release(true);
        if (!reused || replaced >= this.max || !lostWhileIdle(error)) throw toStorageFailure(error);
      }
    }
  }

  /**
   * Runs `work` in one transaction: committed when it resolves, rolled back
   * when it throws. Errors from `work` leave unchanged (driver errors are
   * already StorageFailures); a COMMIT lost with its connection is `uncertain`.
   * `opening`, statements without parameters, is sent with the BEGIN in one
   * message, and the rows of its last statement reach `work`: what every unit
   * of a kind runs first costs no round trip of its own.
   */
  async transaction<T>(mode: TransactionMode, work: (session: PgSession, opened: unknown[]) => Promise<T>, opening?: string): Promise<T> {
    const { client, session, opened } = await this.begin(mode, opening);
    try {
      let result: T;
      try {
        result = await work(session, opened);
      } catch (error) {
        await this.rollback(client, session);
        throw error;
      }
      try {
        await client.query('COMMIT');
      } catch (error) {
        // An ERROR at COMMIT rolled the transaction back. A FATAL one ended
        // the session, possibly after the commit; pg reads the severity from
        // the translated field, so one of a SQLSTATE not listed, from a server
        // whose messages are not English, is told apart by the session itself.
        if (error instanceof pg.DatabaseError && !endsSession(error) && (await sessionAnswers(client))) throw toStorageFailure(error);
        session.broken = true;
        // The server may or may not have committed before the connection
        // went (a backend terminated just after committing still says so).
        throw new StorageFailure(mode === 'read' ? 'unavailable' : 'uncertain', { cause: summarise(error) });
      }
      return result;
    } finally {
      client.release(session.broken);
    }
  }

  private async rollback(client: pg.PoolClient, session: PgSession): Promise<void> {
    if (session.broken) return;
    try {
      await client.query('ROLLBACK');
    } catch {
      // The connection is unusable; it is discarded on release.
      session.broken = true;
    }
  }

  get readOnly(): boolean {
    return this.options.readOnly === true;
  }

  /** The server's `server_version_num`, as checked on a connection. */
  async serverVersionNum(): Promise<number> {
    if (this.versionNum === undefined) (await this.acquire()).client.release();
    if (this.versionNum === undefined) throw new StorageFailure('unavailable');
    return this.versionNum;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }
}

/** Double-quotes an identifier (names come from validated manifests, but quoting is never optional). */
