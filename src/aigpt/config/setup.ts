// `aigpt setup` (spec 4.6): link the config to the site generator's config,
// run first-run initialisation, register the MCP server with Claude Code.
// The file and process effects live here; the CLI passes its output streams,
// its initialisation and (in tests, optionally) a command runner.

import { spawn } from 'node:child_process';
import { constants as fsConstants, promises as fs } from 'node:fs';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { configBaseDir, configBaseSpelling, configFilePath, configFileSpelling, type Environment, resolveFrom, writeInitialConfig } from './config.js';
import { makeFolders } from '../../common/make-folders.js';
import { joinLikeRust } from '../core/record-paths.js';
import { AigptError, describeCause, errnoCode, failedTo } from '../core/errors.js';
import { exists, fsyncDir, tempSuffix } from '../storage/fs-atomic.js';
import { CONFIG_FILE_NAME, SITE_CONFIG_APP_DIR } from '../core/limits.js';

/** Runs `file` with `args`; resolves with its exit code (null when killed by a signal), rejects when it cannot start. */
export type CommandRunner = (file: string, args: readonly string[]) => Promise<number | null>;

export interface SetupOptions {
  readonly environment: Environment;
  readonly clock?: () => Date;
  /** First-run initialisation (spec 2.5), as every other command runs it. */
  readonly initialise: () => Promise<unknown>;
  /** Writes to stdout / stderr; `claude`'s own output is forwarded here too. */
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly runCommand?: CommandRunner;
}

/**
 * `{config_dir}/ai.syui.log/config.json`, absolute: spelt as the reference
 * spells it when the config folder is absolute (see joinLikeRust), made
 * absolute against the working directory otherwise.
 */
export function siteConfigPath(environment: Environment): string {
  return siteConfigUnder(environment, configBaseDir(environment));
}

function siteConfigUnder(environment: Environment, base: string): string {
  if (environment.platform !== 'win32' && isAbsolute(base)) return joinLikeRust(base, SITE_CONFIG_APP_DIR, CONFIG_FILE_NAME);
  return resolveFrom(environment.cwd, base, SITE_CONFIG_APP_DIR, CONFIG_FILE_NAME);
}

/** `YYYYMMDDTHHMMSSZ` in UTC. */
export function backupStamp(date: Date): string {
  return `${date.toISOString().slice(0, 19).replace(/[-:]/g, '')}Z`;
}

/** The four steps of spec 4.6. Throws AigptError for the failures that end the command with exit 1. */
export async function runSetup(options: SetupOptions): Promise<void> {
  const say = (line: string): void => options.stdout(`${line}\n`);
  const { environment } = options;

  const linked = await linkConfig(environment, (options.clock ?? (() => new Date()))(), say);

  // The link may point at a site config that does not exist yet. Every later
  // command refuses a dangling config link (spec 2.5), so setup creates the
  // file it linked to, with the first-run content, like the reference's first
  // run does when the site folder exists.
  if (linked) {
    const site = siteConfigPath(environment);
    if (!(await existsOrFail(site))) await writeInitialConfig(site);
  }
  await options.initialise();
  say('ok data initialized');

  const claude = await findOnPath('claude', environment);
  if (claude === undefined) {
    say('skip claude mcp add (claude not found)');
  } else {
    const aigptPath = (await findOnPath('aigpt', environment)) ?? 'aigpt';
    const args = ['mcp', 'add', '--transport', 'stdio', 'aigpt', '--scope', 'user', '--', aigptPath, 'server'];
    const run = options.runCommand ?? forwardingRunner(options.stdout, options.stderr);
    let code: number | null;
    try {
      code = await run(claude, args);
    } catch (error) {
      // Node's spawn message repeats the path (`spawn /p/claude ENOENT`): the code alone says it.
      throw new AigptError('run_failed', `Failed to run ${claude}: ${errnoCode(error) ?? describeCause(error)}`, { cause: error });
    }
    say(code === 0 ? 'ok claude mcp add aigpt' : 'warn claude mcp add failed');
  }

  say('');
  say('done.');
}

/**
 * Step 1. Returns false only when the platform refused the symlink (Windows
 * without the privilege): then nothing was changed and setup goes on.
 */
async function linkConfig(environment: Environment, now: Date, say: (line: string) => void): Promise<boolean> {
  const file = configFilePath(environment);
  const dir = dirname(file);
  const site = siteConfigPath(environment);
  // Printed as the reference prints them: with `..` as written (the kernel reaches the same files).
  const shownFile = configFileSpelling(environment);
  const shownSite = siteConfigUnder(environment, configBaseSpelling(environment));
  try {
    await makeFolders(dir);
  } catch (error) {
    throw failedTo('create_failed', dir, error);
  }

  const kind = await entryKind(file, site);
  if (kind === 'other') {
    throw new AigptError('create_failed', `Failed to create ${file}: something that is neither a file nor a symlink has that name`);
  }
  const refused = (error: unknown): false => {
    if (environment.platform !== 'win32') throw failedTo('create_failed', file, error);
    say(`warn cannot create symlink: ${describeCause(error)}`);
    return false;
  };

  if (kind === 'missing') {
    try {
      await fs.symlink(site, file);
    } catch (error) {
      return refused(error);
    }
  } else if (kind !== 'linked') {
    // Make the new link first under a hidden name, so a refused symlink
    // changes nothing and the config name is replaced in one rename.
    const temp = join(dir, `.${CONFIG_FILE_NAME}.${tempSuffix()}`);
    try {
      await fs.symlink(site, temp);
    } catch (error) {
      return refused(error);
    }
    try {
      if (kind === 'file') {
        const backup = join(dir, `${CONFIG_FILE_NAME}.bak-${backupStamp(now)}`);
        const taken = (): AigptError => new AigptError('create_failed', `Failed to create ${backup}: a file with that name already exists`);
        // A backup is never overwritten (rename would): a taken name stops setup.
        if (await existsOrFail(backup)) throw taken();
        // The backup is a second name of the file, and the link below replaces
        // config.json in one rename: the config name is never missing, which a
        // running server would take for a first run (saving to the default
        // folder). Without hard links, the file is renamed as before.
        try {
          await fs.link(file, backup);
        } catch (error) {
          if (errnoCode(error) === 'EEXIST') throw taken();
          try {
            await fs.rename(file, backup);
          } catch (renameError) {
            throw failedTo('create_failed', backup, renameError);
          }
        }
        // Spelt like the config path beside it (join would fold a `//` the user wrote).
        const shownBackup = joinLikeRust(dirname(shownFile), basename(backup));
        say(`ok backed up ${shownFile} -> ${shownBackup}`);
      }
      try {
        await fs.rename(temp, file);
      } catch (error) {
        throw failedTo('create_failed', file, error);
      }
    } finally {
      await fs.rm(temp, { force: true });
    }
  }
  if (kind !== 'linked') {
    try {
      await fsyncDir(dir);
    } catch (error) {
      throw failedTo('write_failed', dir, error);
    }
  }
  say(`ok ${shownFile} -> ${shownSite}`);
  return true;
}

type EntryKind = 'missing' | 'linked' | 'symlink' | 'file' | 'other';

/** What has the config's name: nothing, a link to the site config, another link, a regular file, or something else. */
async function entryKind(file: string, site: string): Promise<EntryKind> {
  let stat;
  try {
    stat = await fs.lstat(file);
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') return 'missing';
    throw failedTo('read_failed', file, error);
  }
  if (stat.isFile()) return 'file';
  if (!stat.isSymbolicLink()) return 'other';
  let target: string;
  try {
    target = await fs.readlink(file);
  } catch (error) {
    throw failedTo('read_failed', file, error);
  }
  // A relative link is relative to the folder holding it; compare normalised paths, not the link text.
  return resolve(dirname(file), target) === resolve(site) ? 'linked' : 'symlink';
}

async function existsOrFail(path: string): Promise<boolean> {
  try {
    return await exists(path);
  } catch (error) {
    throw failedTo('read_failed', path, error);
  }
}

/**
 * The first executable file named `name` in the PATH folders, as an absolute
 * path. Empty entries are skipped (they would mean the current folder); a
 * relative entry is taken relative to the current folder. On Windows only
 * `{name}.exe` is looked for: Node cannot start `.cmd`/`.bat` without a shell.
 */
export async function findOnPath(name: string, environment: Environment): Promise<string | undefined> {
  const windows = environment.platform === 'win32';
  const pathValue = environment.env['PATH'] ?? (windows ? environment.env['Path'] : undefined) ?? '';
  const fileName = windows ? `${name}.exe` : name;
  for (const entry of pathValue.split(windows ? ';' : ':')) {
    if (entry === '') continue;
    let candidate: string;
    try {
      candidate = resolveFrom(environment.cwd, entry, fileName);
    } catch {
      continue; // a relative entry while the working directory is deleted names nothing
    }
    if (await isExecutableFile(candidate, windows)) return candidate;
  }
  return undefined;
}

async function isExecutableFile(path: string, windows: boolean): Promise<boolean> {
  try {
    if (!(await fs.stat(path)).isFile()) return false;
    if (!windows) await fs.access(path, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Runs a command with no input, forwarding its output to ours, and resolves with its exit code. */
export function forwardingRunner(stdout: (text: string) => void, stderr: (text: string) => void): CommandRunner {
  return (file, args) =>
    new Promise((resolvePromise, reject) => {
      const child = spawn(file, [...args], { stdio: ['ignore', 'pipe', 'pipe'] });
      child.stdout.setEncoding('utf8').on('data', stdout);
      child.stderr.setEncoding('utf8').on('data', stderr);
      child.once('error', reject);
      child.once('close', (code) => resolvePromise(code));
    });
}
