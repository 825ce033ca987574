// The `aipcs` command tree (operations spec §1.2). Each command is a thin
// edge: parse flags, resolve configuration, call compose.ts, print one
// outcome through output.ts and set the exit status. Parser errors print
// usage text and exit 2. The administration commands live in admin-commands.ts.

import { Command, CommanderError, Option, type HelpContext } from 'commander';
import { argumentsUpToUnknownCommand } from '../../common/cli-arguments.js';
import { endIfStdoutAbandoned } from '../../common/mcp/abandoned-stdout.js';
import { surrogateEscapedEnvironment } from '../../common/raw-arguments.js';
import { CONFIG_FIELD_SPECS, configOptionsFromParsed, type ConfigField, configShowResult, configValidateResult, resolveConfiguration, resolveRunnableConfiguration, transportPreflight, type ResolveInput } from '../config/index.js';
import { escapeUnprintable } from '../config/text-rules.js';
import { sqliteRuntimeVersion } from '../storage/sqlite/connection.js';
import { serve, StartupError } from '../compose.js';
import { PACKAGE_VERSION } from '../version.js';
import {
  doctorCommand,
  exportCommand,
  importCommand,
  maintenanceScanCommand,
  purgeCommand,
  runAdmin,
  serviceInspectCommand,
  serviceListCommand,
  statusCommand,
  storageStatusCommand,
  transitionCommand,
} from './admin-commands.js';
import { CLI_INTERNAL_ERROR } from './error-document.js';
import { writeOutcome, type CliOutcome, type OutputFormat } from './output.js';

const io = { stdout: process.stdout, stderr: process.stderr };

/** What this module last wrote to stdout: a command's result, help text, or nothing (serve's stdout is MCP's). */
let stdoutContent: { readonly format: OutputFormat; readonly command: 'config' | 'admin' } | 'help' | null = null;
let stdoutFailed = false;

const OUTPUT_NOT_WRITTEN = {
  code: 'internal_error',
  message: 'The request could not be completed safely.',
  issues: [
    {
      code: 'output_not_written',
      path: 'stdout',
      message: 'The command completed, but its result could not be written to stdout.',
      remediation: 'Repeat the command with a writable stdout; an operator command repeated with the same operation id replays its result.',
    },
  ],
  retryable: false,
} as const;

// A reader that went away (EPIPE, `aipcs service list | head -c1`) ends the
// output, not the command: the exit status stays the command's, silently.
// Any other failure to write a result or help (ENOSPC, EIO) lost what the
// caller asked for, so it must not exit 0: it is reported on stderr and sets
// the exit status. A failure on stderr itself has nowhere to be reported.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (stdoutFailed || stdoutContent === null || error.code === 'EPIPE') return;
  stdoutFailed = true;
  if (stdoutContent === 'help') {
    // The system code says why (ENOSPC, EIO), as aigpt and aip say it; it names no path (§2.9).
    process.stderr.write(`aipcs: error: cannot write to stdout${typeof error.code === 'string' ? `: ${error.code}` : ''}\n`);
    process.exitCode = 2;
    return;
  }
  process.exitCode = writeOutcome({ ok: false, error: OUTPUT_NOT_WRITTEN }, stdoutContent, { stdout: { write: () => undefined }, stderr: process.stderr });
});
process.stderr.on('error', () => undefined);

const STARTUP_FAILURE = {
  code: 'internal_error',
  message: 'Server could not be started safely.',
  issues: [],
  retryable: false,
} as const;

/**
 * What `--help` says of each configuration option: its values and the
 * default the configuration applies when no option, variable or file key
 * gives it (docs/configuration.md). Text only: none of these is a commander
 * default, so `sources` still tells a given value from a default one.
 */
const CONFIG_OPTION_HELP: Readonly<Record<ConfigField, string>> = {
  profile: 'stateless, sqlite or postgresql (default stateless)',
  transport: 'stdio or streamable-http (default stdio)',
  http_host: 'literal IP address the HTTP listener binds (default 127.0.0.1)',
  http_port: 'HTTP listener port, 1-65535 (default 8000)',
  http_path: 'HTTP endpoint path (default /mcp)',
  http_allowed_hosts: 'comma-separated Host allow-list (default HOST:PORT, plus localhost:PORT for 127.0.0.1 or ::1)',
  http_allowed_origins: 'comma-separated Origin allow-list (default none: a request with an Origin is refused)',
  http_session_idle_timeout_seconds: 'idle HTTP session expiry in seconds, 60-86400 (default 1800)',
  http_allow_non_loopback: 'true or false: allow a non-loopback --http-host (default false)',
  principal_id: 'owner label of every service, 1-128 printable characters (required by sqlite and postgresql)',
  sqlite_data_root: 'absolute SQLite data folder (default: aipcs in the platform data folder, e.g. ~/.local/share/aipcs)',
  sqlite_busy_timeout_ms: 'SQLite busy timeout in ms, 1-30000 (default 5000)',
  postgres_dsn_env: 'NAME of the environment variable holding the PostgreSQL DSN',
  postgres_connect_timeout_seconds: 'PostgreSQL connect timeout in seconds, 1-60 (default 10)',
  postgres_lock_timeout_ms: 'PostgreSQL lock timeout in ms, 1-30000 (default 5000)',
  postgres_statement_timeout_ms: 'PostgreSQL statement timeout in ms, 1000-300000, at least the lock timeout (default 30000)',
  log_level: 'debug, info, warning or error, on stderr (default warning)',
};

/** Adds the configuration options every command accepts (§1.2). */
function withConfigOptions(command: Command): Command {
  command.option('--config <path>', 'TOML configuration file');
  for (const spec of CONFIG_FIELD_SPECS) command.option(`${spec.flag} <value>`, `${CONFIG_OPTION_HELP[spec.field]}; env ${spec.envVar}`);
  return command;
}

function withFormat(command: Command): Command {
  return command.addOption(new Option('--format <format>', 'output format').choices(['json', 'human']).default('json'));
}

function resolveInput(parsed: Record<string, unknown>): ResolveInput {
  // Values that are not UTF-8 reach the checks as the reference's Python sees
  // them (surrogateescape), so they fail as unprintable instead of passing as
  // U+FFFD text nobody typed (operations §2.5). The SQLite version is asked
  // for only by the sqlite profile, so no other profile loads the library
  // (§1.7, decision 4).
  return { options: configOptionsFromParsed(parsed), env: surrogateEscapedEnvironment(process.env), platform: process.platform, sqliteVersion: sqliteRuntimeVersion };
}

function finish(outcome: CliOutcome, format: OutputFormat, command: 'serve' | 'config' | 'admin'): void {
  if (outcome.ok && command !== 'serve') stdoutContent = { format, command };
  const exitCode = writeOutcome(outcome, { format, command }, io);
  if (!stdoutFailed) process.exitCode = exitCode;
}

/** `aipcs service purge`: the command and its parents, as argparse names a subparser. */
function commandPath(command: Command): string {
  const names: string[] = [];
  for (let current: Command | null = command; current; current = current.parent) names.unshift(current.name());
  return names.join(' ');
}

/**
 * An unknown option is named without the value glued to it: a guessed
 * `--postgres-dsn=postgresql://user:secret@host/db` (the flag is
 * `--postgres-dsn-env`) must not print the DSN (spec §2.9), nor `-pSECRET`
 * its tail. Commander's text is `error: unknown option '<arg>'` and an
 * optional suggestion line.
 */
function withoutOptionValue(message: string, command: Command): string {
  const match = /^error: unknown option '([\s\S]*)'(\n\(Did you mean [^\n]*\))?$/.exec(message);
  if (!match) return 'error: unknown option';
  const arg = match[1] ?? '';
  const name = arg.startsWith('--') ? (arg.split('=', 1)[0] ?? arg) : arg.slice(0, 2);
  // `--dry-run=1`: a flag of this command given a value. Commander calls it
  // unknown (suggesting the flag itself); argparse says the value is
  // ignored, and echoes it, which this never does.
  if (arg.startsWith('--') && arg.includes('=') && command.options.some((option) => option.long === name && option.isBoolean())) {
    return `error: argument ${name}: ignored explicit argument`;
  }
  return `error: unknown option '${name}'${match[2] ?? ''}`;
}

/**
 * A parser error echoes what was typed (an unknown command or option, a bad
 * `--format` choice); its unprintable characters are shown escaped, as
 * argparse's repr() shows them, so an argument holding ESC sequences cannot
 * drive the operator's terminal nor a newline forge a line. Commander's
 * suggestion line, which names only our own options, stays a line.
 */
function withEchoEscaped(message: string): string {
  const suggestion = /\n\(Did you mean [^\n]*\)$/.exec(message);
  const head = suggestion ? message.slice(0, suggestion.index) : message;
  return escapeUnprintable(head) + (suggestion?.[0] ?? '');
}

/** argparse's test for a token that cannot be an option's value. */
function looksLikeAnOption(token: string): boolean {
  return token.startsWith('-') && token !== '-' && !/^-\d+$|^-\d*\.\d+$/.test(token) && !token.includes(' ');
}

/**
 * Parser errors read like argparse's (spec §1.3): a `usage:` line, then
 * `aipcs status: error: …`, on stderr, exit 2 (set by runAipcsCli). A group
 * called without its subcommand (`aipcs`, `aipcs service`) is such an error
 * too, not a help page.
 */
class AipcsCommand extends Command {
  override createCommand(name?: string): Command {
    return new AipcsCommand(name).helpCommand(false);
  }

  override error(message: string, errorOptions?: { code?: string; exitCode?: number }): never {
    const path = commandPath(this);
    this.configureOutput().writeErr?.(`usage: ${path} ${this.usage()}\n`);
    const shown = errorOptions?.code === 'commander.unknownOption' ? withoutOptionValue(message, this) : message;
    return super.error(`${path}: ${withEchoEscaped(shown)}`, errorOptions);
  }

  /**
   * argparse reads a token after an option that takes a value as another
   * option when it starts with `-` (unless it is `-` alone, a negative
   * number or holds a space), so `--principal-id -x` is `argument
   * --principal-id: expected one argument`; commander would take `-x` as the
   * value. `--principal-id=-x` gives the value, as in argparse.
   */
  override parseOptions(args: string[]): ReturnType<Command['parseOptions']> {
    for (let index = 0; index + 1 < args.length; index += 1) {
      const token = args[index];
      if (token === '--') break;
      const option = this.options.find((candidate) => (candidate.long === token || candidate.short === token) && (candidate.required || candidate.optional));
      if (option && looksLikeAnOption(args[index + 1] ?? '')) {
        this.error(`error: argument ${option.long ?? token ?? ''}: expected one argument`, { code: 'commander.optionMissingArgument', exitCode: 2 });
      }
    }
    return super.parseOptions(args);
  }

  override help(context?: HelpContext | ((text: string) => string)): never {
    if (typeof context === 'object' && context.error) this.error('error: a command is required', { code: 'commander.missingCommand', exitCode: 2 });
    return typeof context === 'function' ? super.help(context) : super.help(context);
  }
}

export function buildProgram(): Command {
  const program = new AipcsCommand('aipcs')
    .description('AIPCS: a local-first memory primitive server for AI agents over MCP.')
    .version(PACKAGE_VERSION)
    .helpCommand(false)
    // The usage line of spec §1.2, word for word.
    .usage('[-h] {serve,config,status,doctor,storage,service,export,import,maintenance} ...')
    .exitOverride()
    .showHelpAfterError(false)
    .configureHelp({ styleTitle: (title) => title.toLowerCase() })
    .configureOutput({
      writeOut: (text) => {
        stdoutContent = 'help';
        process.stdout.write(text);
      },
      writeErr: (text) => process.stderr.write(text),
    });

  withConfigOptions(
    program
      .command('serve')
      .description('Run the local AIPCS MCP server over stdio. Also over Streamable HTTP with --transport streamable-http (profiles: stateless, sqlite, postgresql).')
      .action(async (parsed: Record<string, unknown>) => {
        const runnable = resolveRunnableConfiguration(resolveInput(parsed));
        if (!runnable.ok) return finish({ ok: false, error: runnable.error }, 'json', 'serve');
        try {
          const code = await serve(runnable.runtime);
          process.exitCode = code;
          // Storage is closed: answers a client never read must not keep the process alive.
          endIfStdoutAbandoned(code);
        } catch (error) {
          if (error instanceof StartupError) return finish({ ok: false, error: STARTUP_FAILURE }, 'json', 'serve');
          return finish({ ok: false, error: CLI_INTERNAL_ERROR }, 'json', 'serve');
        }
      }),
  );

  const config = program.command('config').description('Inspect or validate AIPCS configuration.');
  withFormat(
    withConfigOptions(
      config
        .command('show')
        .description('Show a redacted configuration report.')
        .action((parsed: Record<string, unknown>) => {
          const input = resolveInput(parsed);
          const preflight = transportPreflight(input.options, input.env);
          if (!preflight.ok) return finish({ ok: false, error: preflight.error }, parsed['format'] as OutputFormat, 'config');
          const resolution = resolveConfiguration(input);
          if (!resolution.ok) return finish({ ok: false, error: resolution.error }, parsed['format'] as OutputFormat, 'config');
          finish({ ok: true, result: configShowResult(resolution.config) }, parsed['format'] as OutputFormat, 'config');
        }),
    ),
  );
  withFormat(
    withConfigOptions(
      config
        .command('validate')
        .description('Validate a runnable configuration without starting the server.')
        .action((parsed: Record<string, unknown>) => {
          const runnable = resolveRunnableConfiguration(resolveInput(parsed));
          if (!runnable.ok) return finish({ ok: false, error: runnable.error }, parsed['format'] as OutputFormat, 'config');
          finish({ ok: true, result: configValidateResult(runnable.runtime) }, parsed['format'] as OutputFormat, 'config');
        }),
    ),
  );
  addAdminCommands(program);
  return program;
}

type AdminRunner = Parameters<typeof runAdmin>[0];

/** The action of an admin command: run it, print its one outcome, set the exit status. */
function adminAction(command: AdminRunner, positional: boolean) {
  return async (...args: unknown[]): Promise<void> => {
    const serviceId = positional ? (args[0] as string) : undefined;
    const options = (positional ? args[1] : args[0]) as Record<string, unknown>;
    // Commander passes the command itself last.
    const invoked = args[args.length - 1] as Command;
    const outcome = await runAdmin(command, {
      options,
      commandName: commandPath(invoked),
      ...(serviceId === undefined ? {} : { serviceId }),
      resolveInput: resolveInput(options),
      stdinIsTty: process.stdin.isTTY === true,
      stdoutIsTty: process.stdout.isTTY === true,
    });
    finish(outcome, options['format'] === 'human' ? 'human' : 'json', 'admin');
  };
}

function adminCommand(parent: Command, name: string, description: string): Command {
  return withFormat(withConfigOptions(parent.command(name).description(description)));
}

const YES = '--yes';
const YES_HELP = 'Do not prompt for confirmation.';

/** `yesRequired`: machine mode needs --yes (archive, purge; ops spec 1.9.1), where the others take it optionally. */
function withOperatorOptions(command: Command, yesRequired = false): Command {
  return command
    .argument('<SERVICE_ID>', 'service id')
    .option('--expected-revision <REVISION>', 'the service revision the operation expects (required in machine mode)')
    .option('--operation-id <OPERATION_ID>', 'idempotency key of the operation, a lowercase UUID (required in machine mode)')
    .option(YES, yesRequired ? `${YES_HELP} Required in machine mode.` : YES_HELP);
}

/** `status`, `doctor`, `storage`, `service`, `export`, `import`, `maintenance` (§1.2, §1.8, §1.9). */
function addAdminCommands(program: Command): void {
  adminCommand(program, 'status', 'Show bounded configured-runtime status.').action(adminAction(statusCommand, false));
  adminCommand(program, 'doctor', 'Run read-only configuration/storage checks.')
    .option('--service <SERVICE_ID>', 'also check this service')
    .action(adminAction(doctorCommand, false));

  const storage = program.command('storage').description('Inspect storage readiness.');
  adminCommand(storage, 'status', 'Show safe registry or service-store migration state.')
    .option('--service <SERVICE_ID>', "show this service's store instead of the registry")
    .action(adminAction(storageStatusCommand, false));

  const service = program.command('service').description('Inspect or operate one AIPCS service.');
  adminCommand(service, 'list', 'List principal-scoped services.').option('--limit <N>', 'at most N services (1-100, default 100)').action(adminAction(serviceListCommand, false));
  adminCommand(service, 'inspect', 'Inspect one service.').argument('<SERVICE_ID>', 'service id').action(adminAction(serviceInspectCommand, true));
  const transitions: [TransitionName, string][] = [
    ['suspend', 'Suspend one service.'],
    ['resume', 'Resume one service.'],
    ['archive', 'Archive one service.'],
    ['restore', 'Restore one service.'],
  ];
  for (const [name, description] of transitions) withOperatorOptions(adminCommand(service, name, description), name === 'archive').action(adminAction(transitionCommand(name), true));
  withOperatorOptions(adminCommand(service, 'purge', 'Irreversibly purge one archived service.'), true)
    .addOption(new Option('--receipt <RECEIPT>', 'a verified export receipt id as authority (this or --override is required)').conflicts('override'))
    .addOption(new Option('--override', 'explicit operator authority instead of a receipt (this or --receipt is required)').conflicts('receipt'))
    .option('--confirm-service-id <SERVICE_ID>', 'the service id again, as confirmation (required in machine mode)')
    // Exactly one authority is a parser rule in every mode (spec §1.2, §1.3):
    // neither is usage text and exit 2, like both, never an envelope.
    .hook('preAction', (command) => {
      const options = command.opts<Record<string, unknown>>();
      if (options['receipt'] === undefined && options['override'] !== true) {
        command.error('error: one of the arguments --receipt --override is required', { code: 'aipcs.missingAuthority', exitCode: 2 });
      }
    })
    .action(adminAction(purgeCommand, true));

  withOperatorOptions(adminCommand(program, 'export', 'Write a logical portable service artifact.'))
    .requiredOption('--output <FILE>', 'a new file to write the artifact to (required)')
    .action(adminAction(exportCommand, true));
  adminCommand(program, 'import', 'Validate or import a logical portable service artifact.')
    .requiredOption('--input <FILE>', 'the artifact to read (required)')
    .option('--dry-run', 'validate only; write nothing')
    // Ops spec §1.9.1: a dry run must carry neither --operation-id nor --yes, in any mode.
    .option('--operation-id <OPERATION_ID>', 'idempotency key of the operation, a lowercase UUID (required in machine mode; never with --dry-run)')
    .option(YES, `${YES_HELP} Required in machine mode; never with --dry-run.`)
    .action(adminAction(importCommand, false));

  const maintenance = program.command('maintenance').description('Inspect maintenance candidates.');
  adminCommand(maintenance, 'scan', 'Run a bounded read-only maintenance scan.')
    .requiredOption('--service <SERVICE_ID>', 'the service to scan (required)')
    .action(adminAction(maintenanceScanCommand, false));
}

type TransitionName = 'suspend' | 'resume' | 'archive' | 'restore';

export async function runAipcsCli(argv: readonly string[]): Promise<void> {
  const program = buildProgram();
  try {
    await program.parseAsync([...argumentsUpToUnknownCommand(program, argv, { helpCommand: false })], { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version exit 0; every parser error is invalid input (exit 2).
      process.exitCode = error.exitCode === 0 ? 0 : 2;
      return;
    }
    throw error;
  }
}
