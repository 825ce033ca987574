// The fixed words of a storage failure's reason: from the codes of the
// drivers and the file system, never from their message text, which can
// hold paths and SQL (operations spec §2.9).

import { describe, expect, it } from 'vitest';
import { StorageFailure } from '../../../src/aipcs/core/ports.js';
import { describeFileFailure, describeStorageFailure, storageFailureIn } from '../../../src/aipcs/storage/failure-reason.js';
import { postgresCauseReason, PostgresErrorSummary, PostgresRefusal } from '../../../src/aipcs/storage/postgres/failure-reason.js';
import { UnsafeLocationError } from '../../../src/aipcs/storage/sqlite/location.js';
import { AipcsError } from '../../../src/aipcs/contract/error-codes.js';

/** A driver or file error as the adapters see one: a code, and a message that must never show. */
const driverError = (code: string): Error => Object.assign(new Error(`disk I/O error at /secret/path/svc.sqlite: INSERT INTO note ...`), { code });

describe('describeStorageFailure', () => {
  it.each([
    ['SQLITE_FULL', 'storage unavailable: the file system is full'],
    ['SQLITE_IOERR_WRITE', 'storage unavailable: the file system failed a read or write'],
    ['SQLITE_IOERR_FSYNC', 'storage unavailable: the file system failed a read or write'],
    ['SQLITE_IOERR_SHMSIZE', "storage unavailable: the file system has no room for a database's -shm file (is it full?)"],
    ['SQLITE_CORRUPT', 'storage unavailable: a database file is damaged'],
    ['SQLITE_NOTADB', 'storage unavailable: a database file is damaged'],
    ['SQLITE_READONLY_DBMOVED', 'storage unavailable: a database file cannot be written'],
    ['SQLITE_READONLY_ROLLBACK', 'storage unavailable: an interrupted write left a journal that only a writer can roll back (aipcs serve does, for the registry)'],
    ['SQLITE_CANTOPEN', 'storage unavailable: a database file could not be opened'],
    ['ENOSPC', 'storage unavailable: the file system is full'],
    ['EROFS', 'storage unavailable: the file system is read-only'],
    ['SQLITE_MISUSE', 'storage unavailable'],
    ['ENOENT', 'storage unavailable'],
  ])('says %s as fixed words', (code, text) => {
    const described = describeStorageFailure(new StorageFailure('unavailable', { cause: driverError(code) }));
    expect(described).toBe(text);
    expect(described).not.toContain('/secret');
  });

  it('finds the reason under a re-wrapped cause, and keeps the failure kind', () => {
    const cause = new Error('wrapper', { cause: driverError('SQLITE_FULL') });
    expect(describeStorageFailure(new StorageFailure('uncertain', { cause }))).toBe('storage uncertain: the file system is full');
  });

  it('uses the words of the location policy and of the PostgreSQL adapter', () => {
    expect(describeStorageFailure(new StorageFailure('unavailable', { cause: new UnsafeLocationError('a storage directory is not mode 0700') }))).toBe(
      'storage unavailable: a storage directory is not mode 0700',
    );
    expect(describeStorageFailure(new StorageFailure('unavailable', { cause: new PostgresRefusal('the DSN variable is not set') }))).toBe('storage unavailable: the DSN variable is not set');
    expect(describeStorageFailure(new StorageFailure('unavailable', { cause: new PostgresErrorSummary('3D000', null, 'database "x" does not exist') }))).toBe(
      'storage unavailable: the database does not exist',
    );
  });

  it('is bare without a cause it can name', () => {
    expect(describeStorageFailure(new StorageFailure('unavailable'))).toBe('storage unavailable');
  });
});

describe('postgresCauseReason', () => {
  const lost = 'the connection could not be opened or was lost (no answer within the connect timeout, TLS refused, or the server closed it)';

  it.each([
    ['28P01', 'the server refused the login (wrong password, or no such role)'],
    ['28000', 'the server refused the login (no pg_hba.conf entry allows it, or the role may not log in)'],
    ['3D000', 'the database does not exist'],
    ['42501', 'the role lacks a privilege it needs (CONNECT on the database, or access to the registry schema)'],
    ['53300', 'no connection slot is free (the server or the role has reached its connection limit)'],
    ['57P03', 'the server is starting up, shutting down or in recovery'],
    ['08004', 'the server rejected the connection'],
    ['3F000', 'a schema storage needs does not exist'],
    ['42P01', 'a table storage needs does not exist'],
    // The rest of a class by its class; query_canceled (57014) ends no session.
    ['57P01', 'the server ended the session (shut down, restarted, or the backend was terminated)'],
    ['08006', 'the connection failed'],
    ['28999', 'the server refused the login'],
    ['57014', 'the server refused a statement'],
    ['0A000', 'the server refused a statement'],
    ['23505', 'the server refused a statement'],
    ['XX000', 'the server refused a statement'],
  ])('says SQLSTATE %s as fixed words', (sqlstate, text) => {
    expect(postgresCauseReason(new PostgresErrorSummary(sqlstate, null, 'role "alice" ...'))).toBe(text);
  });

  it.each([
    ['ECONNREFUSED', 'the connection was refused (no server listens at that address)'],
    ['ENOTFOUND', 'the host name could not be resolved'],
    ['EAI_AGAIN', 'the host name could not be resolved'],
    ['EHOSTUNREACH', 'the host could not be reached'],
    ['ENETUNREACH', 'the host could not be reached'],
    ['ETIMEDOUT', 'the host could not be reached'],
    ['ECONNRESET', 'the connection was reset'],
    ['ENOENT', 'a file the DSN names does not exist (a TLS file, or the server socket of a host folder)'],
    ['EACCES', 'a file the DSN names cannot be read (a TLS file, or the server socket of a host folder)'],
    ['EPIPE', lost],
    ['ECONN', lost],
  ])('says client code %s as fixed words', (code, text) => {
    expect(postgresCauseReason(new PostgresErrorSummary(null, null, 'postgresql client error', code))).toBe(text);
  });

  it('says a client error without a code as a lost connection, and names no cause that is not the adapter\'s', () => {
    expect(postgresCauseReason(new PostgresErrorSummary(null, null, 'postgresql client error'))).toBe(lost);
    expect(postgresCauseReason(driverError('ECONNREFUSED'))).toBeUndefined();
    expect(postgresCauseReason(undefined)).toBeUndefined();
  });
});

describe("describeFileFailure (an export's output, an import's input)", () => {
  it.each([
    ['ENOSPC', 'the file system is full'],
    ['EDQUOT', 'the disk quota is used up'],
    ['EROFS', 'the file system is read-only'],
    ['ENOENT', 'the file or its folder does not exist'],
    ['EACCES', 'access to the file or its folder was refused'],
    ['EOPNOTSUPP', 'the file system does not support hard links'],
  ])('says %s as fixed words', (code, text) => {
    expect(describeFileFailure(new Error('wrapper', { cause: driverError(code) }))).toBe(text);
  });

  it('names no driver code and nothing it does not know', () => {
    expect(describeFileFailure(driverError('SQLITE_FULL'))).toBeUndefined();
    expect(describeFileFailure(driverError('EWHATEVER'))).toBeUndefined();
    expect(describeFileFailure(undefined)).toBeUndefined();
  });
});

describe('storageFailureIn', () => {
  it('finds the adapter failure an application error wraps', () => {
    const failure = new StorageFailure('unavailable');
    expect(storageFailureIn(new AipcsError('storage_unavailable', { cause: failure }))).toBe(failure);
    expect(storageFailureIn(failure)).toBe(failure);
    expect(storageFailureIn(new AipcsError('not_found_data'))).toBeUndefined();
  });
});
