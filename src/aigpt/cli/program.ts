// The aigpt command tree (spec 4): status, server, read-core, read-memory,
// save-memory, setup, v, with the reference's output lines and exit codes
// (0 ok, 1 runtime failure, 2 usage). Writes only through the injected streams.

import { Command, CommanderError } from 'commander';
import { createLogger } from '../../common/logger.js';
import { argumentsUpToUnknownCommand } from '../../common/cli-arguments.js';
import { moduleLoadFailure } from '../../common/launch.js';
import { AigptApp, type AppOptions, describeRecovery, mergeRecovery, type OpenedApp } from '../app.js';
import { AigptError } from '../core/errors.js';
import { AIGPT_VERSION, CORE_COLLECTION, MEMORY_COLLECTION } from '../core/limits.js';
import { COMPRESS_PENDING, type RecoveryReport } from '../storage/memory-store.js';
import { renderPretty } from '../core/record-format.js';
import { runSetup } from '../config/setup.js';

export interface CliIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  /** Resolves when stdout has taken what was written so far; long outputs wait on it. */
  readonly stdoutDrained?: () => Promise<void>;
  /** True once stdout broke (its reader went away): long outputs stop there. */
  readonly stdoutBroken?: () => boolean;
  readonly stdin?: NodeJS.ReadableStream;
  readonly stdoutStream?: NodeJS.WritableStream;
}

export interface CliOptions extends AppOptions {
  readonly io: CliIo;
}

const EXIT_OK = 0;
const EXIT_FAILURE = 1;
const EXIT_USAGE = 2;

/** Runs one invocation and returns its exit code; never calls process.exit. */
export async function runCli(argv: readonly string[], options: CliOptions): Promise<number> {
  const { io } = options;
  let exitCode = EXIT_OK;

  const app = new AigptApp(options);
  // Readers never lock or recover (spec 7.3, 7.5); writers recover first.
  const open = async (access: 'read' | 'write'): Promise<OpenedApp> => {
    const opened = await app.open({ recover: access === 'write' });
    tellRecovery(opened.recovery);
    return opened;
  };
  const tellRecovery = (report: RecoveryReport | undefined): void => {
    for (const line of describeRecovery(report)) io.stderr(`aigpt: ${line}\n`);
  };

  // Spec 4.1: -v/--version counts only before a subcommand and wins over it,
  // but, as with the reference's parser, only once the whole command line has
  // parsed: `aigpt -v foo` or `aigpt -v save-memory` is a usage error (exit 2).
  // So it is a plain flag every action checks first, not commander's version
  // option, which prints and exits before the rest is looked at.
  const versionRequested = (): boolean => program.opts<{ version?: boolean }>().version === true;
  const printVersion = (): void => io.stdout(`${AIGPT_VERSION}\n`);
  const unlessVersion =
    <A extends unknown[]>(action: (...args: A) => void | Promise<void>) =>
    async (...args: A): Promise<void> => {
      if (versionRequested()) printVersion();
      else await action(...args);
    };

  const program = new Command('aigpt')
    .description('AI memory MCP server: flat memory as ATProto record files.\nWithout a command: show the config and status.')
    .option('-v, --version', 'print the version')
    // Subcommands take no options.
    .enablePositionalOptions()
    .helpOption('-h, --help', 'print help')
    .helpCommand('help [command]', 'print help for a command')
    .exitOverride()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr })
    .showHelpAfterError('(run aigpt --help for usage)')
    // Stray words reach the root action so they can be named as unknown commands;
    // subcommands inherit this setting, so each one turns it off again.
    .allowExcessArguments(true)
    .action(async (_options: unknown, command: Command) => {
      const stray = command.args[0];
      if (stray !== undefined) program.error(`error: unknown command '${stray}'`, { exitCode: EXIT_USAGE, code: 'aigpt.unknownCommand' });
      if (versionRequested()) printVersion();
      else exitCode = await status(await open('read'), io);
    });

  program
    .command('server')
    .allowExcessArguments(false)
    .description('run the MCP server on stdin/stdout')
    .action(unlessVersion(async () => {
      // Recovery at start (spec 7.5) does not wait for a live writer's lock: see AigptApp.open.
      tellRecovery((await app.open({ recover: true, busyHolderDefers: true })).recovery);
      // The MCP edge (the SDK and its schema library) is loaded only here:
      // the other commands start faster without it, and need far fewer open
      // files (Node opens a module graph's files all at once).
      const { runServer, testAnswerWait } = await import('../mcp/server.js').catch((error: unknown) => {
        const failure = moduleLoadFailure(error);
        throw failure === null ? error : new AigptError('read_failed', failure);
      });
      const answerWaitMs = testAnswerWait(options.environment.env);
      await runServer(app, createLogger('aigpt'), {
        ...(answerWaitMs === undefined ? {} : { answerWaitMs }),
        ...(io.stdin === undefined ? {} : { input: io.stdin }),
        ...(io.stdoutStream === undefined ? {} : { output: io.stdoutStream }),
      });
    }));

  program
    .command('read-core')
    .allowExcessArguments(false)
    .description('print the core record')
    .action(unlessVersion(async () => {
      const core = await (await open('read')).store.readCore();
      io.stdout(`${renderPretty(core.value)}\n`);
    }));

  program
    .command('read-memory')
    .allowExcessArguments(false)
    .description('print every memory record, oldest first')
    .action(unlessVersion(async () => {
      exitCode = await readMemory(await open('read'), io);
    }));

  program
    .command('save-memory')
    .allowExcessArguments(false)
    .description('add one memory record')
    .argument('<content>', 'the memory element, may be empty (-- before one starting with -)')
    .action(unlessVersion(async (content: string) => {
      // The save recovers the memory folder under its own lock, from the one
      // pass over the folder it makes anyway; the config folder's recovery,
      // done now, is told with the memory folder's as one report.
      const { config, store, recovery } = await app.open({ recover: true, recoveredByWrite: true });
      let told = false;
      const tell = (memory: RecoveryReport | undefined): void => {
        if (!told) tellRecovery(mergeRecovery(memory, recovery));
        told = true;
      };
      // Said under the lock, as soon as the record is in place: a Ctrl-C
      // during the write ends the command once the lock is released, and
      // the user must still learn that the memory was saved (a retry would
      // save it twice).
      const announce = (saved: { readonly count: number }): void => {
        io.stdout(`Saved. (${saved.count} records)\n`);
        if (BigInt(saved.count) > config.memory) {
          io.stderr(`warning: ${saved.count} records exceed the memory limit of ${config.memory}; compress is needed\n`);
        }
      };
      try {
        await store.saveMemory(content, { recovered: tell, written: announce });
      } finally {
        tell(undefined);
      }
    }));

  program
    .command('setup')
    .allowExcessArguments(false)
    .description('link the config to the site config and register with Claude Code')
    .action(unlessVersion(async () => {
      await runSetup({
        environment: options.environment,
        ...(options.clock === undefined ? {} : { clock: options.clock }),
        initialise: () => open('write'),
        stdout: io.stdout,
        stderr: io.stderr,
      });
    }));

  program
    .command('v')
    .allowExcessArguments(false)
    .description('print the version')
    .action(unlessVersion(() => {
      // The bare version, as the reference prints it (not `aigpt {version}`).
      io.stdout(`${AIGPT_VERSION}\n`);
    }));

  const root = rootOptionsAsClapReadsThem(argv, program.commands.map((command) => command.name()));
  if ('error' in root) {
    io.stderr(`error: ${root.error}\n(run aigpt --help for usage)\n`);
    return EXIT_USAGE;
  }
  try {
    await program.parseAsync([...argumentsUpToUnknownCommand(program, root.argv, { helpCommand: true })], { from: 'user' });
    return exitCode;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version end the parse with an "error" whose exit code is 0.
      return error.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
    }
    if (error instanceof AigptError) {
      io.stderr(`aigpt: ${error.message}\n`);
      return EXIT_FAILURE;
    }
    io.stderr(`aigpt: unexpected error: ${error instanceof Error ? error.message : String(error)}\n`);
    return EXIT_FAILURE;
  }
}

/**
 * The options before the subcommand as clap, the reference's parser, reads
 * them, one at a time from the left, where commander reads them otherwise:
 *
 * - a second `-v`/`--version` (`-v -v`, `-vv`, `-v --version`) is a usage
 *   error, as clap refuses a flag given twice (commander printed the version);
 * - a help flag prints the help at once, also inside a cluster (`-hv`, which
 *   commander refused) but not after an unknown option (`-x -h` is a usage
 *   error; commander printed the help);
 * - after `--` no subcommand is recognised: `aigpt -- server` is a usage error
 *   (commander ran the server); a bare trailing `--` changes nothing;
 * - after the subcommand, a word like `-5` is an unknown option, not an operand;
 * - `help` takes command names only (see helpTopicsAsClapReadsThem).
 *
 * Returns the arguments to hand to commander, or the usage error.
 */
export function rootOptionsAsClapReadsThem(argv: readonly string[], commands: readonly string[] = []): { readonly argv: readonly string[] } | { readonly error: string } {
  let version = false;
  for (let index = 0; index < argv.length; index++) {
    const word = argv[index] as string;
    if (word === '--') {
      const next = argv[index + 1];
      return next === undefined ? { argv } : { error: `unexpected argument '${next}' found` };
    }
    let flags: string[];
    if (word.startsWith('--')) flags = [word];
    else if (word.startsWith('-') && word.length > 1) flags = [...word.slice(1)].map((letter) => `-${letter}`);
    else if (word === 'help') return helpTopicsAsClapReadsThem(argv, index, commands);
    else return negativeNumberAfter(argv, index) ?? { argv }; // the subcommand, or a word commander names as an unknown command
    for (const flag of flags) {
      if (flag === '-h' || flag === '--help') return { argv: ['--help'] };
      if (flag !== '-v' && flag !== '--version') return { error: `unexpected argument '${flag}' found` };
      if (version) return { error: "the argument '--version' cannot be used multiple times" };
      version = true;
    }
  }
  return { argv };
}

/**
 * `aigpt help [COMMAND]`, as clap reads it: an option other than a help flag
 * is a usage error (commander printed the whole help on stderr, exit 2, with
 * no error line), a `--` is skipped, and a word after a known command is an
 * unrecognised subcommand (commander printed that command's help, exit 0).
 * An unknown first topic is left to the unknown-command error (`-` is named here).
 */
function helpTopicsAsClapReadsThem(argv: readonly string[], help: number, commands: readonly string[]): { readonly argv: readonly string[] } | { readonly error: string } {
  const topics: string[] = [];
  let operands = false;
  let helpFlag = false;
  for (const word of argv.slice(help + 1)) {
    if (!operands && word === '--') operands = true;
    else if (!operands && (word === '-h' || word === '--help')) helpFlag = true;
    else if (!operands && word.startsWith('-') && word !== '-') return { error: `unexpected argument '${word}' found` };
    else topics.push(word);
  }
  // A help flag asks for help, as before (`help -h`, `help server -h`).
  if (helpFlag) return { argv };
  const [topic, extra] = topics;
  if (topic !== undefined && extra !== undefined && commands.includes(topic)) return { error: `unrecognized subcommand '${extra}'` };
  // `-` is no command either; commander printed the whole help for it (exit 2, no error line).
  if (topic === '-') return { error: "unknown command '-'" };
  return { argv: [...argv.slice(0, help + 1), ...(topic === undefined ? [] : [topic])] };
}

/** What commander takes for a negative number and so for an operand (commander's own pattern). */
const NEGATIVE_NUMBER = /^-(\d+|\d*\.\d+)(e[+-]?\d+)?$/;

/**
 * A word after the subcommand that looks like a negative number (before any
 * `--`): clap reads it as a short option none of the commands has, a usage
 * error (`aigpt save-memory -5`; `aigpt save-memory -- -5` saves it), where
 * commander took it as the content and saved it.
 */
function negativeNumberAfter(argv: readonly string[], subcommand: number): { readonly error: string } | undefined {
  const saving = argv[subcommand] === 'save-memory';
  for (const word of argv.slice(subcommand + 1)) {
    if (word === '--') return undefined;
    // A memory text that starts with `-` ("-5 degrees", "--force is risky") is
    // refused like any unknown option; clap then names the way out, and so does this.
    const optionLike = saving && word.startsWith('-') && word !== '-' && word !== '-h' && word !== '--help';
    if (NEGATIVE_NUMBER.test(word) || optionLike) {
      const tip = saving ? `\n\n  tip: to pass '${word}' as a value, use '-- ${word}'` : '';
      return { error: `unexpected argument '${word}' found${tip}` };
    }
  }
  return undefined;
}

async function status(app: OpenedApp, io: CliIo): Promise<number> {
  const { config, store } = app;
  let count = 0;
  let unreadable = 0;
  let compressPending = false;
  let memoryProblem = false;
  try {
    // A scan keeps no record, and only counts the files beyond the read
    // bound (they are not unreadable): the status reads a folder of any size.
    let skipped = 0;
    const scan = await store.scanMemories(
      (item) => {
        if ('skipped' in item) skipped++;
      },
      undefined,
      { readAll: false },
    );
    count = scan.selected;
    unreadable = skipped;
    compressPending = scan.compressPending;
  } catch {
    // The reference prints 0 when the folder cannot be listed; a warning says it is no count.
    count = 0;
    memoryProblem = true;
  }
  let coreProblem = false;
  try {
    await store.readCore();
  } catch {
    // The reference says nothing here; its instructions silently drop the core.
    coreProblem = true;
  }
  const lines = [
    'aigpt - AI memory MCP server',
    '',
    `config: ${config.configFile}`,
    `did:    ${config.did}`,
    `handle: ${config.handle}`,
    `memory: ${config.memory}`,
    '',
    `path: ${config.base}/`,
    `  ${config.identity}/${CORE_COLLECTION}/self.json`,
    `  ${config.identity}/${MEMORY_COLLECTION}/*.json`,
    '',
    `records: ${count}/${config.memory}`,
  ];
  if (config.baseIsRelative) lines.push('warning: path is relative to the current directory');
  if (memoryProblem) lines.push('warning: the memory folder cannot be read, so the count is not one; see aigpt read-memory');
  if (unreadable > 0) lines.push(`warning: ${unreadable} unreadable memory file(s); see aigpt read-memory`);
  if (compressPending) lines.push(`warning: ${COMPRESS_PENDING}`);
  if (coreProblem) lines.push('warning: the core record cannot be read, so the instructions leave it out; see aigpt read-core');
  io.stdout(`${lines.join('\n')}\n`);
  return EXIT_OK;
}

/** Ends a scan whose output nobody reads any more. */
class OutputGone extends Error {}

async function readMemory(app: OpenedApp, io: CliIo): Promise<number> {
  let records = 0;
  // Printed as read, so the whole folder is never held at once.
  const scanning = app.store.scanMemories(
    async (item) => {
      // `aigpt read-memory | head -1`: the rest of the folder would be read,
      // parsed and rendered for nobody (the reference dies of SIGPIPE there).
      if (io.stdoutBroken?.() === true) throw new OutputGone();
      if ('skipped' in item) {
        io.stderr(`aigpt: skipped ${item.skipped.path}: ${item.skipped.reason}\n`);
        return;
      }
      records++;
      io.stdout(`${renderPretty(item.record.value)}\n`);
      await io.stdoutDrained?.();
    },
    (listing) => {
      if (listing.compressPending) io.stderr(`aigpt: ${COMPRESS_PENDING}\n`);
    },
    { readAll: true },
  );
  let scan: Awaited<typeof scanning>;
  try {
    scan = await scanning;
  } catch (error) {
    if (error instanceof OutputGone) return EXIT_OK;
    throw error;
  }
  // A compress kept replacing the set through every listing: what was
  // printed is a mix of the two sets (spec 7.5), which is said.
  if (scan.gone > 0) io.stderr(`aigpt: ${scan.gone} memory file(s) were removed while being read (a compress replacing the set); run read-memory again for the whole set\n`);
  if (records > 0) return EXIT_OK;
  if (scan.selected > 0) return EXIT_FAILURE;
  io.stdout('No memory records found\n');
  return EXIT_OK;
}
