// What is left of a PostgreSQL failure once its text is gone, and the fixed
// reason an operator reads for it (../failure-reason.ts): without the DSN, a
// host, a role or database name, SQL, a SQLSTATE or driver text (operations
// spec §2.9). Free of the driver, so composition can describe a failure
// without loading it.

/**
 * What survives of a driver error as a StorageFailure cause: the SQLSTATE and,
 * for server errors about our own statements, the server's message. Client
 * side errors (sockets, TLS, URL parsing, which may echo the connection
 * string) keep only their code.
 */
export class PostgresErrorSummary extends Error {
  constructor(
    readonly sqlstate: string | null,
    readonly constraint: string | null,
    detail: string,
    /** A client-side error's code (ECONNREFUSED, ENOTFOUND, ...), when it had one. */
    readonly clientCode: string | null = null,
  ) {
    super(detail);
    this.name = 'PostgresErrorSummary';
  }
}

/** A refusal of the adapter itself (not of the driver or server), with a fixed reason. */
export class PostgresRefusal extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'PostgresRefusal';
  }
}

const SERVER_REASONS: Readonly<Record<string, string>> = {
  '28P01': 'the server refused the login (wrong password, or no such role)',
  '28000': 'the server refused the login (no pg_hba.conf entry allows it, or the role may not log in)',
  '3D000': 'the database does not exist',
  '42501': 'the role lacks a privilege it needs (CONNECT on the database, or access to the registry schema)',
  '53300': 'no connection slot is free (the server or the role has reached its connection limit)',
  '57P03': 'the server is starting up, shutting down or in recovery',
  '08004': 'the server rejected the connection',
  '3F000': 'a schema storage needs does not exist',
  '42P01': 'a table storage needs does not exist',
};

const CLIENT_REASONS: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'the connection was refused (no server listens at that address)',
  ENOTFOUND: 'the host name could not be resolved',
  EAI_AGAIN: 'the host name could not be resolved',
  EHOSTUNREACH: 'the host could not be reached',
  ENETUNREACH: 'the host could not be reached',
  ETIMEDOUT: 'the host could not be reached',
  ECONNRESET: 'the connection was reset',
  // The driver reads the DSN's TLS files (and a Unix socket path) for every connection.
  ENOENT: 'a file the DSN names does not exist (a TLS file, or the server socket of a host folder)',
  EACCES: 'a file the DSN names cannot be read (a TLS file, or the server socket of a host folder)',
};

/** The fixed reason for a SQLSTATE the server answered with. */
function serverReason(sqlstate: string): string {
  const known = SERVER_REASONS[sqlstate];
  if (known) return known;
  if (sqlstate.startsWith('57P')) return 'the server ended the session (shut down, restarted, or the backend was terminated)';
  if (sqlstate.startsWith('08')) return 'the connection failed';
  if (sqlstate.startsWith('28')) return 'the server refused the login';
  return 'the server refused a statement';
}

/**
 * The fixed reason of a PostgreSQL adapter's failure cause ("the database
 * does not exist"); undefined for a cause that is not the adapter's.
 */
export function postgresCauseReason(cause: unknown): string | undefined {
  if (cause instanceof PostgresRefusal) return cause.message;
  if (!(cause instanceof PostgresErrorSummary)) return undefined;
  if (cause.sqlstate !== null) return serverReason(cause.sqlstate);
  const client = cause.clientCode === null ? undefined : CLIENT_REASONS[cause.clientCode];
  return client ?? 'the connection could not be opened or was lost (no answer within the connect timeout, TLS refused, or the server closed it)';
}
