// Locating, creating and validating the config file (spec 2). Platform, env
// and home are injected so tests point it at temp folders. Knows the record
// tree only through record-paths; never touches record files.

import { promises as fs, lstatSync, realpathSync, statSync } from 'node:fs';
import { userInfo } from 'node:os';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { isJsonObject, type JsonValue, JsonError, jsonStringStopsAt, parseJson, textPosition } from '../../common/json.js';
import { makeFolders } from '../../common/make-folders.js';
import { rawEnvironmentEntries } from '../../common/raw-arguments.js';
import { FileTooLargeError, NotRegularFileError, readRegularFile } from '../../common/regular-file.js';
import { absolutePath, AigptError, describeCause, errnoCode, failedTo } from '../core/errors.js';
import { writeNewFileAtomic } from '../storage/fs-atomic.js';
import {
  CONFIG_APP_DIR,
  CONFIG_FILE_NAME,
  DEFAULT_MEMORY_LIMIT,
  MAX_CONFIG_FILE_BYTES,
  MAX_JSON_DEPTH,
  MAX_MEMORY_LIMIT,
} from '../core/limits.js';
import { BOM, isWellFormedText, negativeZeroAsFloat } from '../core/record-format.js';
import { joinLikeRust, type RecordTree, recordTree } from '../core/record-paths.js';

export interface Environment {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly platform: NodeJS.Platform;
  /** The user database's home folder, used when $HOME is unset or empty. */
  readonly homedir: () => string;
  readonly cwd: () => string;
  /** Variables whose raw bytes are not valid UTF-8 (their text in `env` holds U+FFFD instead). */
  readonly undecodable?: ReadonlySet<string>;
}

/** The variables aigpt takes folder names from. */
const PATH_VARIABLES = ['HOME', 'XDG_CONFIG_HOME'] as const;

export function processEnvironment(): Environment {
  return { env: process.env, platform: process.platform, homedir: userDatabaseHome, cwd: currentFolder, undecodable: undecodablePathVariables(process.env) };
}

/**
 * Which of PATH_VARIABLES hold bytes that are not UTF-8. Node decodes the
 * environment with U+FFFD in place of such bytes, so `HOME=/home/j\xf6rg`
 * read as text names another folder (`/home/j\u{FFFD}rg`, which aigpt then
 * created and filled). The raw bytes come from `/proc/self/environ` (Linux),
 * read only when one of them holds U+FFFD; elsewhere nothing can be told.
 */
export function undecodablePathVariables(env: Readonly<Record<string, string | undefined>>, environFile = '/proc/self/environ'): ReadonlySet<string> {
  const suspects = PATH_VARIABLES.filter((name) => env[name]?.includes('\ufffd') === true);
  const found = new Set<string>();
  if (suspects.length === 0) return found;
  const entries = rawEnvironmentEntries(environFile);
  if (entries === undefined) return found;
  const strict = new TextDecoder('utf-8', { fatal: true });
  for (const [name, raw] of entries) {
    if (!(suspects as readonly string[]).includes(name)) continue;
    try {
      strict.decode(raw);
    } catch {
      found.add(name);
    }
  }
  return found;
}

/** Refuses a folder variable that is not text, instead of using the other folder its decoded text names. */
function assertDecodable(environment: Environment, name: (typeof PATH_VARIABLES)[number]): void {
  if (environment.undecodable?.has(name) !== true) return;
  throw new AigptError(
    'config_invalid',
    `${name} is not valid UTF-8: aigpt names folders as text, and as text it is ${JSON.stringify(environment.env[name])}, another folder; set ${name} to a UTF-8 path`,
  );
}

/**
 * The working directory, asked for only when a path is relative. A deleted
 * one makes Node's process.cwd() throw ENOENT (uv_cwd), which aigpt reported
 * as an "unexpected error" even when every path it needed was absolute.
 */
function currentFolder(): string {
  try {
    return process.cwd();
  } catch (error) {
    throw new AigptError('read_failed', `cannot tell the current folder (${describeCause(error)}; was it deleted?): change to an existing folder, or use absolute paths`, { cause: error });
  }
}

/** `resolve(...parts)` that asks `cwd` only when no part is absolute (a deleted working directory then matters only to relative paths). */
export function resolveFrom(cwd: () => string, ...parts: readonly string[]): string {
  return parts.some((part) => isAbsolute(part)) ? resolve(...parts) : resolve(cwd(), ...parts);
}

/**
 * The home folder from the user database. Not os.homedir(): that returns
 * $HOME as it is, "" included, where spec 2.1 wants an empty HOME treated as
 * unset. "" when the user has no entry (configBaseDir then uses ".").
 */
function userDatabaseHome(): string {
  try {
    return userInfo().homedir;
  } catch {
    return '';
  }
}

export interface AigptConfig {
  /** The config file as the reference prints it (`..` as written; see configBaseSpelling). */
  readonly configFile: string;
  /** `{config_dir}/ai.syui.gpt`, spelt likewise: the config's folder and the default base. */
  readonly appDir: string;
  readonly did: string;
  readonly handle: string;
  /** bot.path after expansion, as the user wrote it (may be relative). */
  readonly base: string;
  readonly baseIsRelative: boolean;
  /** The configured limit, exactly (u64). */
  readonly memory: bigint;
  /** Folder name under base: the DID, or the handle on Windows. */
  readonly identity: string;
  /** Absolute paths of the record tree. */
  readonly tree: RecordTree;
}

export function homeDir(environment: Environment): string {
  const home = environment.env['HOME'];
  if (home === undefined || home === '') return environment.homedir();
  assertDecodable(environment, 'HOME');
  return home;
}

/** The platform's per-user config folder (spec 2.1); `.` when none can be determined, like the reference. */
export function configBaseDir(environment: Environment): string {
  return configBase(environment, true);
}

/**
 * The config folder as the reference prints it: `HOME` or `XDG_CONFIG_HOME`
 * as written, `..` included (spec 4.2 keeps the status lines identical).
 * Files are reached through configBaseDir; the kernel takes both to one folder.
 */
export function configBaseSpelling(environment: Environment): string {
  return configBase(environment, false);
}

function configBase(environment: Environment, takeParentSteps: boolean): string {
  const { env, platform } = environment;
  if (platform === 'win32') {
    const appData = env['APPDATA'];
    return appData !== undefined && appData !== '' ? appData : '.';
  }
  // `..` steps are taken as the kernel takes them (see resolveParentSteps), not lexically by join.
  const physical = (path: string): string => (takeParentSteps ? resolveParentSteps(path, environment.cwd, platform) : path);
  const xdg = env['XDG_CONFIG_HOME'];
  if (platform !== 'darwin' && xdg !== undefined && isAbsolute(xdg)) {
    assertDecodable(environment, 'XDG_CONFIG_HOME');
    return physical(xdg);
  }
  let home: string;
  try {
    home = homeDir(environment);
  } catch (error) {
    if (error instanceof AigptError) throw error; // HOME is not text
    home = '';
  }
  if (platform === 'darwin') return home === '' ? '.' : joinLikeRust(physical(home), 'Library', 'Application Support');
  return home === '' ? '.' : joinLikeRust(physical(home), '.config');
}

/** `{config_dir}/ai.syui.gpt`, or a file in it, spelt as the reference spells it (Windows: Node's join). */
function underConfigDir(environment: Environment, ...parts: readonly string[]): string {
  return underBase(environment, configBaseDir(environment), parts);
}

function underBase(environment: Environment, base: string, parts: readonly string[]): string {
  return environment.platform === 'win32' ? join(base, ...parts) : joinLikeRust(base, ...parts);
}

/**
 * `path` with each `..` step taken as the kernel takes it: from where the
 * path so far really leads (symlinks followed), not by dropping the
 * previous name as Node's join/resolve do. The reference hands its paths to
 * the kernel unnormalised, so `/data/link/../content`, with `link` a
 * symlink, is a folder beside the link's target for it, and must be for us
 * too, or records land elsewhere. A path without `..` is returned as is; a
 * relative one with `..` is taken from `cwd()`. Parts that do not exist yet
 * are taken by name (what mkdir -p then creates). POSIX only: Windows
 * resolves `..` by name itself.
 */
export function resolveParentSteps(path: string, cwd: () => string, platform: NodeJS.Platform): string {
  const parts = path.split('/');
  if (platform === 'win32' || !parts.includes('..')) return path;
  let current = path.startsWith('/') ? '/' : cwd();
  for (const [index, part] of parts.entries()) {
    if (part === '' || part === '.') continue;
    if (part !== '..') {
      current = joinLikeRust(current, part);
      continue;
    }
    const real = realPrefix(current);
    // No folder to step back from (a file, a dangling link, a link loop): the
    // rest is left to the kernel, which then refuses it as it refuses the reference.
    if (real === undefined) return joinLikeRust(current, parts.slice(index).join('/'));
    current = dirname(real);
  }
  return current;
}

/**
 * `path` with its longest existing leading part replaced by that part's real
 * path; undefined when that part is not a folder or cannot be followed (a
 * file, a dangling link, a link loop, no search permission).
 */
function realPrefix(path: string): string | undefined {
  const missing: string[] = [];
  for (let head = path; ; head = dirname(head)) {
    let real: string;
    try {
      real = realpathSync(head);
    } catch (error) {
      // Only a name that is not there at all is created by mkdir -p; a dangling link is there.
      if (errnoCode(error) !== 'ENOENT' || lstatSync(head, { throwIfNoEntry: false }) !== undefined) return undefined;
      if (dirname(head) === head) return path;
      missing.push(basename(head));
      continue;
    }
    if (statSync(real, { throwIfNoEntry: false })?.isDirectory() !== true) return undefined;
    return missing.length === 0 ? real : join(real, ...missing.reverse());
  }
}

export function configFilePath(environment: Environment): string {
  return underConfigDir(environment, CONFIG_APP_DIR, CONFIG_FILE_NAME);
}

/** The config file as the reference prints it (see configBaseSpelling). */
export function configFileSpelling(environment: Environment): string {
  return underBase(environment, configBaseSpelling(environment), [CONFIG_APP_DIR, CONFIG_FILE_NAME]);
}

/** What `aigpt` writes on first run: the reference's bytes (no memory key, no trailing newline). */
export const INITIAL_CONFIG_TEXT = JSON.stringify({ bot: { did: null, handle: null, path: null } }, null, 2);

/**
 * First-run step 1 (spec 2.5): create the config file if there is none.
 * A dangling symlink is reported instead of being written through.
 */
export async function ensureConfigFile(environment: Environment): Promise<string> {
  const file = configFilePath(environment);
  let linkStat;
  try {
    linkStat = await fs.lstat(file);
  } catch (error) {
    if (errnoCode(error) !== 'ENOENT') throw failedTo('read_failed', file, error);
  }
  if (linkStat !== undefined) {
    if (linkStat.isSymbolicLink()) {
      try {
        await fs.stat(file);
      } catch (error) {
        if (errnoCode(error) === 'ENOENT') {
          const target = await fs.readlink(file).catch(() => '?');
          throw new AigptError('config_invalid', `invalid config ${absolutePath(file)}: dangling symlink to ${target}`);
        }
        throw failedTo('read_failed', file, error);
      }
    }
    return file;
  }
  await writeInitialConfig(file);
  return file;
}

/**
 * Creates `file` (and its folder) with the first-run content, atomically and
 * only if nothing has that name yet: an existing entry, even one created by
 * another process a moment ago, wins.
 */
export async function writeInitialConfig(file: string): Promise<void> {
  const dir = dirname(file);
  try {
    await makeFolders(dir);
  } catch (error) {
    throw failedTo('create_failed', dir, error);
  }
  try {
    await writeNewFileAtomic(dir, basename(file), INITIAL_CONFIG_TEXT);
  } catch (error) {
    throw failedTo('write_failed', file, error);
  }
}

const DID_PATTERN = /^did:[a-z]+:[a-zA-Z0-9._:%-]*[a-zA-Z0-9._-]$/;
const HANDLE_PATTERN = /^([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.)+[a-zA-Z]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?$/;
export const DEFAULT_IDENTITY = 'self';
/** NAME_MAX of Linux and macOS file systems: the longest identity folder name (spec 3.1). */
export const MAX_FOLDER_NAME_BYTES = 255;

export function isValidDid(value: string): boolean {
  return value.length <= 2048 && DID_PATTERN.test(value);
}

export function isValidHandle(value: string): boolean {
  return value.length <= 253 && HANDLE_PATTERN.test(value);
}

/** The most characters of a refused value that a config error quotes. */
export const MAX_QUOTED_CONFIG_CHARS = 64;

/**
 * A refused value as the config error quotes it: whole when short, else its
 * first characters and its length. The message reaches every tool result and
 * the instructions, which spec 8 bounds at 256 KiB; the config file may be 1 MiB.
 */
function quotedPrefix(value: string): string {
  const characters = [...value];
  if (characters.length <= MAX_QUOTED_CONFIG_CHARS) return JSON.stringify(value);
  return `${JSON.stringify(characters.slice(0, MAX_QUOTED_CONFIG_CHARS).join(''))}... (${characters.length} characters)`;
}

/**
 * ` at line L, column C` (1-based, columns in characters) where a syntax
 * error stopped the parse, so a hand-edited config can be mended; only the
 * line when `-0` was rewritten on the way (the columns moved).
 */
function whereJsonStops(text: string, offset: number | undefined, columnsKept: boolean): string {
  if (offset === undefined) return '';
  const { line, column } = textPosition(text, offset);
  return columnsKept ? ` at line ${line}, column ${column}` : ` at line ${line}`;
}

/** Reads and validates the config. A missing file is an error here: call ensureConfigFile first. */
export async function loadConfig(environment: Environment): Promise<AigptConfig> {
  const file = configFilePath(environment);
  const invalid = (detail: string): AigptError => new AigptError('config_invalid', `invalid config ${absolutePath(file)}: ${detail}`);
  let bytes: Buffer;
  try {
    // Bounded while reading, not only by the stat size: a pseudo-file says 0 whatever it holds.
    bytes = await readRegularFile(file, MAX_CONFIG_FILE_BYTES);
  } catch (error) {
    // A folder, FIFO, device or socket (which open refuses with ENXIO) is no config file.
    if (error instanceof NotRegularFileError || errnoCode(error) === 'EISDIR' || errnoCode(error) === 'ENXIO') throw invalid('not a regular file');
    if (error instanceof FileTooLargeError) throw invalid(`larger than ${MAX_CONFIG_FILE_BYTES} bytes`);
    throw new AigptError('config_invalid', `invalid config ${absolutePath(file)}: cannot read it (${describeCause(error)})`, { cause: error });
  }
  let text: string;
  try {
    // ignoreBOM keeps a leading BOM so it is refused below, as serde_json refuses it.
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw invalid('not UTF-8');
  }
  if (text.startsWith(BOM)) throw invalid('not valid JSON (the file starts with a UTF-8 byte order mark)');
  let document: JsonValue;
  let scan: ConfigScan | undefined;
  // `-0` is a float for serde_json, so `"memory": -0` is refused like `5.0`.
  const parsed = negativeZeroAsFloat(text);
  const parse = (source: string): JsonValue => parseJson(source, { maxBytes: 2 * MAX_CONFIG_FILE_BYTES, maxDepth: MAX_JSON_DEPTH });
  try {
    document = parse(parsed);
  } catch (error) {
    if (!(error instanceof JsonError)) throw error;
    // A number beyond f64 or deep nesting where serde never reads (a site
    // generator's own members): serde skips such values unconverted and
    // unbounded, so the config loads; the values aigpt reads are still held
    // to every rule.
    const scanned = error.code === 'json_syntax' ? undefined : scanConfigText(text);
    // A syntax error past a number or nesting the parser refused is named where it is.
    if (scanned !== undefined && 'stoppedAt' in scanned) throw invalid(`not valid JSON${whereJsonStops(text, scanned.stoppedAt, true)} (${MALFORMED_JSON})`);
    scan = scanned;
    const kept = scan === undefined ? undefined : spliceNulls(text, scan.ignored);
    let reparsed: JsonValue | undefined;
    try {
      reparsed = kept === undefined ? undefined : parse(negativeZeroAsFloat(kept));
    } catch (second) {
      if (!(second instanceof JsonError)) throw second;
      throw invalid(`not valid JSON (${second.message})`);
    }
    if (reparsed === undefined) throw invalid(`not valid JSON${whereJsonStops(parsed, error.offset, parsed === text)} (${error.message})`);
    document = reparsed;
  }
  if (!isJsonObject(document)) throw invalid('the file must hold a JSON object');
  // The text parsed, so a scan of it never stops early.
  const checked = scan ?? scanConfigText(text);
  const repeated = checked !== undefined && 'repeated' in checked ? checked.repeated : undefined;
  if (repeated !== undefined) throw invalid(`${repeated} appears twice`);
  const bot = document['bot'];
  if (bot !== undefined && bot !== null && !isJsonObject(bot)) throw invalid('bot must be an object');
  const field = (name: string): JsonValue | undefined => (isJsonObject(bot) ? bot[name] : undefined);

  const stringField = (name: string): string | undefined => {
    const value = field(name);
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'string') throw invalid(`bot.${name} must be a string`);
    // serde_json refuses a lone surrogate escape in a string it reads; Node would put U+FFFD in a path.
    if (!isWellFormedText(value)) throw invalid(`bot.${name} holds a lone surrogate escape`);
    return value;
  };

  const did = stringField('did') ?? DEFAULT_IDENTITY;
  if (did !== DEFAULT_IDENTITY && !isValidDid(did)) throw invalid(`bot.did is not a valid DID: ${quotedPrefix(did)}`);
  const handle = stringField('handle') ?? DEFAULT_IDENTITY;
  if (handle !== DEFAULT_IDENTITY && !isValidHandle(handle)) {
    throw invalid(`bot.handle is not a valid handle: ${quotedPrefix(handle)}`);
  }

  const memoryValue = field('memory');
  let memory = DEFAULT_MEMORY_LIMIT;
  if (memoryValue !== undefined && memoryValue !== null) {
    // The lossless parser gives bigint only for integer tokens, so 5.0 and 1e2 are rejected like serde's u64.
    if (typeof memoryValue !== 'bigint' || memoryValue < 0n || memoryValue > MAX_MEMORY_LIMIT) {
      throw invalid('bot.memory must be a non-negative integer');
    }
    memory = memoryValue;
  }

  // The default base as the reference prints it; the tree below takes its `..` steps.
  const appDir = underBase(environment, configBaseSpelling(environment), [CONFIG_APP_DIR]);
  const pathValue = stringField('path');
  // No file system takes a NUL in a path; Node's refusal would echo the raw value.
  if (pathValue?.includes('\0') === true) throw invalid('bot.path holds a NUL character');
  const base = expandPath(pathValue, appDir, environment);
  const identity = environment.platform === 'win32' ? handle : did;
  // A valid DID may be 2048 characters, but it names a folder: past NAME_MAX every mkdir would fail with ENAMETOOLONG.
  if (Buffer.byteLength(identity) > MAX_FOLDER_NAME_BYTES) {
    throw invalid(
      `bot.did is ${identity.length} characters, longer than a folder name may be (${MAX_FOLDER_NAME_BYTES}); it names the identity folder`,
    );
  }
  const physicalBase = resolveParentSteps(base, environment.cwd, environment.platform);
  // A `..` still there is one the kernel refuses (after a file or a link loop): resolve would drop it by name.
  const keptParentStep = environment.platform !== 'win32' && physicalBase.split('/').includes('..');
  const absoluteBase = keptParentStep ? physicalBase : resolveFrom(environment.cwd, physicalBase);
  return {
    configFile: configFileSpelling(environment),
    appDir,
    did,
    handle,
    base,
    baseIsRelative: !isAbsolute(base),
    memory,
    identity,
    tree: recordTree(absoluteBase, identity),
  };
}

/** The members the reference deserialises into structs; serde refuses a repeated one (the others it ignores). */
const BOT_FIELDS = new Set(['did', 'handle', 'path', 'memory']);

/** The common JSON reader's words for a syntax error, so both ways of finding one read alike. */
const MALFORMED_JSON = 'The JSON document is malformed.';

const JSON_SPACE = /[ \t\n\r]*/y;
const JSON_STRING = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;
const JSON_SCALAR = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null/y;

interface ConfigScan {
  /**
   * `bot`, or `bot.{field}`, first repeated in one object: serde's derived
   * struct fails on a duplicate field, so the reference would fall back to
   * the defaults, where our parser keeps the last one and would name another
   * folder. Repeats elsewhere are ignored, as in serde.
   */
  readonly repeated: string | undefined;
  /** The spans of the values serde never reads (a top-level member other than `bot`, a member of `bot` other than its fields). */
  readonly ignored: readonly (readonly [number, number])[];
}

/** Where the scan found the text stop being JSON (an offset into it). */
interface ScanStop {
  readonly stoppedAt: number;
}

/**
 * One pass over the config text that checks it is a JSON object, without
 * converting a number or bounding nesting (the scan keeps its own stack);
 * undefined when the text does not start as an object, a ScanStop where it
 * stops being JSON after that.
 */
function scanConfigText(text: string): ConfigScan | ScanStop | undefined {
  interface Frame {
    readonly object: boolean;
    readonly place: 'top' | 'bot' | 'other';
    readonly keys: Set<string>;
    key: string;
  }
  let repeated: string | undefined;
  let pos = 0;
  const take = (pattern: RegExp): string | undefined => {
    pattern.lastIndex = pos;
    const found = pattern.exec(text)?.[0];
    if (found !== undefined) pos += found.length;
    return found;
  };
  const readKey = (frame: Frame): boolean => {
    take(JSON_SPACE);
    const key = take(JSON_STRING);
    if (key === undefined) return false;
    frame.key = JSON.parse(key) as string;
    const tracked = frame.place === 'top' ? frame.key === 'bot' : frame.place === 'bot' && BOT_FIELDS.has(frame.key);
    if (tracked) {
      if (repeated === undefined && frame.keys.has(frame.key)) repeated = frame.place === 'top' ? 'bot' : `bot.${frame.key}`;
      frame.keys.add(frame.key);
    }
    take(JSON_SPACE);
    if (text[pos] !== ':') return false;
    pos++;
    return true;
  };
  const stack: Frame[] = [];
  const cuts: [number, number][] = [];
  let cut: { readonly start: number; readonly depth: number } | undefined;
  take(JSON_SPACE);
  if (text[pos] !== '{') return undefined;
  // A string that breaks is placed where it breaks, as the parser places it.
  const stop = (): ScanStop => ({ stoppedAt: (text[pos] === '"' ? jsonStringStopsAt(text, pos) : undefined) ?? pos });
  for (;;) {
    // A value starts here.
    take(JSON_SPACE);
    const parent = stack.at(-1);
    const ignored = parent?.object === true && (parent.place === 'top' ? parent.key !== 'bot' : parent.place === 'bot' && !BOT_FIELDS.has(parent.key));
    if (ignored && cut === undefined) cut = { start: pos, depth: stack.length };
    const opening = text[pos];
    let complete = true;
    if (opening === '{' || opening === '[') {
      pos++;
      const place = parent === undefined ? 'top' : parent.place === 'top' && parent.key === 'bot' && opening === '{' ? 'bot' : 'other';
      const frame: Frame = { object: opening === '{', place, keys: new Set(), key: '' };
      stack.push(frame);
      take(JSON_SPACE);
      if (text[pos] === (frame.object ? '}' : ']')) {
        pos++;
        stack.pop();
      } else {
        if (frame.object && !readKey(frame)) return stop();
        complete = false;
      }
    } else if (take(opening === '"' ? JSON_STRING : JSON_SCALAR) === undefined) {
      return stop();
    }
    // The value is complete: close what it completes, up to the next value.
    while (complete) {
      if (cut !== undefined && stack.length === cut.depth) {
        cuts.push([cut.start, pos]);
        cut = undefined;
      }
      const frame = stack.at(-1);
      take(JSON_SPACE);
      if (frame === undefined) return pos === text.length ? { repeated, ignored: cuts } : stop();
      const next = text[pos++];
      if (next === ',') {
        if (frame.object && !readKey(frame)) return stop();
        complete = false;
      } else if (next === (frame.object ? '}' : ']')) {
        stack.pop();
      } else {
        pos--;
        return stop();
      }
    }
  }
}

/** `text` with each of the ordered, disjoint `cuts` replaced by `null`, built in one pass. */
function spliceNulls(text: string, cuts: readonly (readonly [number, number])[]): string {
  const parts: string[] = [];
  let from = 0;
  for (const [start, end] of cuts) {
    parts.push(text.slice(from, start), 'null');
    from = end;
  }
  parts.push(text.slice(from));
  return parts.join('');
}

/**
 * Spec 2.3: `~/rest` is home joined with rest (no normalisation, like Rust's
 * PathBuf::join, which also makes an absolute rest win); `~` alone is home (project decision); empty or absent means
 * the default folder; everything else is used as given.
 */
export function expandPath(value: string | undefined, defaultBase: string, environment: Environment): string {
  if (value === undefined || value === '') return defaultBase;
  // No home folder at all (HOME unset, no user database entry): the reference's `.`, not the root folder.
  const home = (): string => homeDir(environment) || '.';
  if (value === '~') return home();
  if (value.startsWith('~/')) {
    const rest = value.slice(2);
    // PathBuf::join with an absolute path replaces the base: `~//x` is `/x` in the reference.
    if (environment.platform !== 'win32' && rest.startsWith('/')) return rest;
    const dir = home();
    return dir.endsWith('/') ? dir + rest : `${dir}/${rest}`;
  }
  return value;
}
