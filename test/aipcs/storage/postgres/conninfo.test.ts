// libpq's keyword/value connection strings rewritten for node-postgres, which
// reads only URIs (src/aipcs/storage/postgres/conninfo.ts). No server needed.

import pgConnectionString from 'pg-connection-string';
import { describe, expect, it } from 'vitest';
import { driverConnectionString, DSN_NOT_CONNINFO, DSN_SEVERAL_HOSTS, parseKeywordValue } from '../../../../src/aipcs/storage/postgres/conninfo.js';

const driverText = (dsn: string): string => {
  const rewritten = driverConnectionString(dsn);
  if (!rewritten.ok) throw new Error(`refused: ${dsn}`);
  return rewritten.text;
};

const seen = (dsn: string): Record<string, unknown> => {
  const parsed = pgConnectionString.parse(driverText(dsn)) as Record<string, unknown>;
  return { host: parsed['host'], port: parsed['port'], database: parsed['database'], user: parsed['user'], password: parsed['password'] };
};

describe('keyword/value DSNs', () => {
  it('reaches the driver as the same settings', () => {
    expect(seen('host=db.internal port=5433 dbname=aipcs user=agent password=s3cret')).toEqual({ host: 'db.internal', port: '5433', database: 'aipcs', user: 'agent', password: 's3cret' });
    expect(seen(" host = /var/run/postgresql\tdbname='my db' user=me password='it\\'s a \\\\ secret' ")).toEqual({ host: '/var/run/postgresql', port: '', database: 'my db', user: 'me', password: "it's a \\ secret" });
    expect(seen('hostaddr=::1 dbname=x')).toMatchObject({ host: '::1', database: 'x' });
    // As libpq: the connection goes to hostaddr, with no name lookup, whatever host says.
    expect(seen('host=db.example hostaddr=10.0.0.5 dbname=x')).toMatchObject({ host: '10.0.0.5', database: 'x' });
    expect(seen('hostaddr=10.0.0.5 host=db.example dbname=x')).toMatchObject({ host: '10.0.0.5', database: 'x' });
    // Database names with the characters a URI path reserves; only `?` and `#` cannot be said (docs/postgresql.md).
    for (const name of ['a+b', 'x;y:z@w&v=u$t,s', 'a/b', 'p%q', 'é d']) expect(seen(`dbname='${name}'`).database).toBe(name);
    const options = pgConnectionString.parse(driverText("dbname=x sslmode=disable options='-c search_path=a,b'")) as Record<string, unknown>;
    expect(options).toMatchObject({ database: 'x', sslmode: 'disable', options: '-c search_path=a,b' });
  });

  it('passes postgresql:// URIs unchanged and refuses text in neither form, which the driver would send to a host named "base"', () => {
    for (const dsn of ['postgresql://a:b@h:1/d?sslmode=verify-full', 'postgres://h/d', 'PostgreSQL://h/d']) {
      expect(driverConnectionString(dsn)).toEqual({ ok: true, text: dsn });
    }
    const mistyped = ['host=db.internal password=Top Secret', "password='unterminated", 'dbname', '=x', 'garbage', '/var/run/postgresql aipcs', 'socket:/var/run?db=x', 'mysql://h/d', 'postgresql:/h/d'];
    for (const dsn of mistyped) expect(driverConnectionString(dsn)).toEqual({ ok: false, reason: DSN_NOT_CONNINFO });
    expect(DSN_NOT_CONNINFO).not.toMatch(/Secret/);
    // A URI with white space around it goes trimmed: with a space first, the
    // driver read it as a relative URL too (host "base", the DSN as database).
    expect(driverConnectionString(' postgresql://agent:Top%20Secret@db.internal/aipcs \n')).toEqual({ ok: true, text: 'postgresql://agent:Top%20Secret@db.internal/aipcs' });
    expect(seen(' postgresql://agent:Top%20Secret@db.internal/aipcs')).toEqual({ host: 'db.internal', port: '', database: 'aipcs', user: 'agent', password: 'Top Secret' });
    // libpq's host lists: refused in words, not as a URI to percent-encode or a host named "h1,h2".
    for (const dsn of ['postgresql://h1:5432,h2:5433/db', 'postgres://u@h1,h2/db', 'host=h1,h2 dbname=x', 'host=h port=5432,5433', 'hostaddr=10.0.0.1,10.0.0.2']) {
      expect(driverConnectionString(dsn)).toEqual({ ok: false, reason: DSN_SEVERAL_HOSTS });
    }
    expect(driverConnectionString('postgresql://h/db?options=-c%20search_path%3Da,b').ok).toBe(true);
    expect(parseKeywordValue('a=1 b= 2 c =3 d=\'\'')).toEqual(new Map([['a', '1'], ['b', '2'], ['c', '3'], ['d', '']]));
  });

  it("separates pairs by runs of any of C's white space, and escapes as libpq does", () => {
    // A DSN kept in a multi-line variable or file: newlines separate pairs too.
    expect(parseKeywordValue('a=1\n\nb=2\r\n c=3\fd=4\ve=5  \t f=6')).toEqual(
      new Map([['a', '1'], ['b', '2'], ['c', '3'], ['d', '4'], ['e', '5'], ['f', '6']]),
    );
    // Outside quotes a backslash escapes the next character, a space included.
    expect(parseKeywordValue('password=a\\ b\\\\c user=x')).toEqual(new Map([['password', 'a b\\c'], ['user', 'x']]));
    // libpq drops a backslash that ends the text unquoted; psycopg would log in with 'abc'.
    expect(parseKeywordValue('user=x password=abc\\')).toEqual(new Map([['user', 'x'], ['password', 'abc']]));
    // Inside quotes a backslash before the closing quote escapes it: the quote is unterminated.
    expect(parseKeywordValue("password='a\\'")).toBeUndefined();
    expect(driverConnectionString("dbname=x password='a\\'")).toEqual({ ok: false, reason: DSN_NOT_CONNINFO });
    for (const blank of ['', ' \n\t ']) expect(driverConnectionString(blank)).toEqual({ ok: false, reason: DSN_NOT_CONNINFO });
  });

  it('keeps the settings after a database name holding ? or #, which would otherwise start the query or the fragment', () => {
    for (const name of ['a?b', 'a#b']) {
      const parsed = pgConnectionString.parse(driverText(`dbname='${name}' sslmode=verify-full user=agent`)) as Record<string, unknown>;
      expect(parsed, name).toMatchObject({ sslmode: 'verify-full', user: 'agent' });
      expect(parsed['database'], name).not.toBe('a');
    }
  });

  it('refuses a host list only in the authority of a URI, not a comma in its path or query', () => {
    expect(driverConnectionString('postgresql://h/a,b')).toEqual({ ok: true, text: 'postgresql://h/a,b' });
    expect(driverConnectionString('postgresql://u@h/db?application_name=a,b').ok).toBe(true);
  });
});
