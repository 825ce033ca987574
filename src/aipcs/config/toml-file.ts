// Decodes and checks the bytes of the `--config` TOML file (operations spec
// §2.4): size, strict UTF-8, TOML 1.0, shape bounds, config_version and the
// closed key sets. Pure: the bytes come from config-file-reader.ts, and a
// failure names only the area (never a key, value or line).

import { parse } from 'smol-toml';
import { isPlainObject } from '../../common/json.js';
import type { ConfigIssuePath } from './errors.js';
import { CONFIG_FIELD_SPECS, type ConfigField, type TomlTableName } from './fields.js';
import { usesToml11Syntax } from './toml-v1-guard.js';

export const MAX_CONFIG_FILE_BYTES = 65_536;
const MAX_DEPTH = 8;
const MAX_ENTRIES_AND_ITEMS = 128;
const MAX_ARRAY_ITEMS = 16;

/** The native TOML values found in the file, by field, plus which storage tables were present. */
export interface ConfigFileValues {
  readonly values: Partial<Record<ConfigField, unknown>>;
  /** A `[sqlite]` table was present, even empty (cross-rules of §2.6). */
  readonly sqliteTable: boolean;
  /** A `[postgresql]` table was present, even empty. */
  readonly postgresqlTable: boolean;
}

export type ConfigFileOutcome = { readonly ok: true; readonly file: ConfigFileValues } | { readonly ok: false; readonly path: ConfigIssuePath };

const TABLES: readonly TomlTableName[] = ['identity', 'sqlite', 'postgresql', 'logging', 'streamable_http'];
const TOP_LEVEL_KEYS = new Set<string>(['config_version', 'profile', 'transport', ...TABLES]);

type TomlTable = Record<string, unknown>;

function isTable(value: unknown): value is TomlTable {
  return isPlainObject(value) && !(value instanceof Date);
}

function fail(path: ConfigIssuePath): ConfigFileOutcome {
  return { ok: false, path };
}

export function parseConfigFile(bytes: Uint8Array): ConfigFileOutcome {
  if (bytes.length > MAX_CONFIG_FILE_BYTES) return fail('configuration');
  let text: string;
  try {
    // ignoreBOM keeps a BOM in the text so that it is refused, as a strict
    // UTF-8 decode followed by a TOML 1.0 parse refuses it.
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return fail('configuration');
  }
  if (text.startsWith('\ufeff')) return fail('configuration');
  let document: TomlTable;
  try {
    document = parse(text, { integersAsBigInt: true, maxDepth: 64 }) as TomlTable;
  } catch {
    return fail('configuration');
  }
  if (usesToml11Syntax(text)) return fail('configuration');
  if (!withinBounds(document)) return fail('configuration');

  const version = document['config_version'];
  if (version !== 1n) return fail('config_version');
  for (const key of Object.keys(document)) {
    if (!TOP_LEVEL_KEYS.has(key)) return fail('configuration');
  }
  for (const table of TABLES) {
    if (!Object.hasOwn(document, table)) continue;
    const section = document[table];
    if (!isTable(section)) return fail(table);
    const allowed = new Set(CONFIG_FIELD_SPECS.filter((item) => item.tomlTable === table).map((item) => item.tomlKey));
    for (const key of Object.keys(section)) {
      if (!allowed.has(key)) return fail(table);
    }
  }

  const values: Partial<Record<ConfigField, unknown>> = {};
  for (const item of CONFIG_FIELD_SPECS) {
    const holder = item.tomlTable === null ? document : document[item.tomlTable];
    if (isTable(holder) && Object.hasOwn(holder, item.tomlKey)) values[item.field] = holder[item.tomlKey];
  }
  return {
    ok: true,
    file: { values, sqliteTable: Object.hasOwn(document, 'sqlite'), postgresqlTable: Object.hasOwn(document, 'postgresql') },
  };
}

/**
 * Depth ≤ 8 (the document itself is depth 0), table entries plus array items
 * ≤ 128 over the whole document, and no array longer than 16. Iterative, so a
 * hostile file cannot exhaust the stack.
 */
function withinBounds(document: TomlTable): boolean {
  let count = 0;
  const pending: { value: unknown; depth: number }[] = [{ value: document, depth: 0 }];
  while (pending.length > 0) {
    const { value, depth } = pending.pop() as { value: unknown; depth: number };
    if (depth > MAX_DEPTH) return false;
    let children: unknown[];
    if (Array.isArray(value)) {
      if (value.length > MAX_ARRAY_ITEMS) return false;
      children = value;
    } else if (isTable(value)) {
      children = Object.values(value);
    } else {
      continue;
    }
    count += children.length;
    if (count > MAX_ENTRIES_AND_ITEMS) return false;
    for (const child of children) pending.push({ value: child, depth: depth + 1 });
  }
  return true;
}
