// The keyword/value form of a PostgreSQL connection string
// (`host=db port=5432 dbname=aipcs user=agent sslmode=verify-full`), which
// libpq and psycopg (the reference's driver) accept beside the URI form.
// node-postgres understands only URIs: it read such a string as a relative
// URL, so the whole text (password included) became the database name, the
// host became `base`, and the role came from PGUSER whatever `user=` said.
// A keyword/value string is rewritten here into the equivalent URI, whose
// query parameters node-postgres reads key by key. Pure text; no I/O.

/** libpq's two URI prefixes: such a DSN goes to the driver as it is. */
const URI_PREFIX = /^postgres(?:ql)?:\/\//i;

const isSpace = (char: string | undefined): boolean => char === ' ' || char === '\t' || char === '\n' || char === '\r' || char === '\f' || char === '\v';

/**
 * libpq's conninfo grammar: `keyword = value` pairs separated by white space;
 * a value is single-quoted (backslash escapes the next character, `''` is
 * empty) or runs to the next white space (backslash escapes there too).
 * Returns undefined when the text is not in that form.
 */
export function parseKeywordValue(text: string): Map<string, string> | undefined {
  const pairs = new Map<string, string>();
  let i = 0;
  const skipSpace = (): void => {
    while (isSpace(text[i])) i++;
  };
  for (skipSpace(); i < text.length; skipSpace()) {
    const start = i;
    while (i < text.length && text[i] !== '=' && !isSpace(text[i])) i++;
    const keyword = text.slice(start, i);
    skipSpace();
    // libpq's keywords are all words (host, sslmode, …): `socket:/x?db` is no keyword.
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(keyword) || text[i] !== '=') return undefined;
    i++;
    skipSpace();
    let value = '';
    if (text[i] === "'") {
      i++;
      for (;;) {
        if (i >= text.length) return undefined; // unterminated quote
        const char = text[i] as string;
        if (char === '\\' && i + 1 < text.length) {
          value += text[i + 1];
          i += 2;
        } else if (char === "'") {
          i++;
          break;
        } else {
          value += char;
          i++;
        }
      }
    } else {
      while (i < text.length && !isSpace(text[i])) {
        if (text[i] === '\\') {
          // As libpq: a backslash that ends the text escapes nothing and is dropped.
          if (i + 1 < text.length) value += text[i + 1];
          i += 2;
        } else {
          value += text[i];
          i++;
        }
      }
    }
    pairs.set(keyword, value);
  }
  return pairs.size > 0 ? pairs : undefined;
}

/** Why a DSN was refused before the driver saw it; fixed text, never the DSN's. */
export const DSN_NOT_CONNINFO = 'the DSN is neither a postgresql:// URI nor keyword=value text (quote a value holding spaces: password=\'a b\')';

/** libpq's host lists (failover): node-postgres connects to one host only. */
export const DSN_SEVERAL_HOSTS = 'the DSN names several hosts or ports; give one (the driver connects to a single host)';

/**
 * The connection string node-postgres should be given, or the refusal of a
 * DSN that libpq would refuse too. A `postgresql://` (or `postgres://`) URI
 * goes as it is; a keyword/value string as the URI saying the same
 * (`dbname` in the path, every other keyword a query parameter, which
 * node-postgres reads as the setting of that name: host, port, user,
 * password, sslmode, options, …). Anything else is refused here: the driver
 * would read it as a URL relative to `postgres://base`, connecting to a
 * host named `base` with the whole text, password included, as the
 * database name.
 */
export function driverConnectionString(dsn: string): { readonly ok: true; readonly text: string } | { readonly ok: false; readonly reason: string } {
  const trimmed = dsn.trim();
  // The trimmed text: with a space before the prefix, the driver too reads a relative URL.
  if (URI_PREFIX.test(trimmed)) {
    const authority = /^[^/?#]*/.exec(trimmed.replace(URI_PREFIX, ''))?.[0] ?? '';
    return authority.includes(',') ? { ok: false, reason: DSN_SEVERAL_HOSTS } : { ok: true, text: trimmed };
  }
  const pairs = parseKeywordValue(trimmed);
  if (pairs === undefined) return { ok: false, reason: DSN_NOT_CONNINFO };
  if (['host', 'hostaddr', 'port'].some((keyword) => pairs.get(keyword)?.includes(',') === true)) return { ok: false, reason: DSN_SEVERAL_HOSTS };
  const query = new URLSearchParams();
  let database = '';
  for (const [keyword, value] of pairs) {
    if (keyword === 'dbname') database = value;
    // libpq connects to hostaddr, without a name lookup, whatever host says
    // (host then names the server for TLS checks only; here a verify-full
    // check is made against the address, so it fails closed).
    else if (keyword === 'host') {
      if (!pairs.has('hostaddr')) query.set('host', value);
    } else if (keyword === 'hostaddr') query.set('host', value);
    else query.set(keyword, value);
  }
  const rest = query.toString();
  // The driver takes the path through decodeURI, which leaves `;/?:@&=+$,#`
  // escaped: those stay literal (a path holds them), but `?` and `#` cannot.
  const path = encodeURI(database).replace(/[?#]/g, (char) => encodeURIComponent(char));
  return { ok: true, text: `postgresql:///${path}${rest === '' ? '' : `?${rest}`}` };
}
