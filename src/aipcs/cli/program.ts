// The `aipcs` command tree (operations spec §1.2). Each command is a thin
// edge: parse flags, resolve configuration, call compose.ts, print one
// outcome through output.ts and set the exit status. Parser errors print
// usage text and exit 2.

import { Command, CommanderError, Option } from 'commander';
import { CONFIG_FIELD_SPECS, configOptionsFromParsed, configShowResult, configValidateResult, resolveConfiguration, resolveRunnableConfiguration, transportPreflight, type ResolveInput } from '../config/index.js';
import { sqliteRuntimeVersion } from '../storage/sqlite/connection.js';
import { serve, StartupError } from '../compose.js';
import { PACKAGE_VERSION } from '../version.js';
import { CLI_INTERNAL_ERROR } from './error-document.js';
import { writeOutcome, type CliOutcome, type OutputFormat } from './output.js';

const io = { stdout: process.stdout, stderr: process.stderr };

const STARTUP_FAILURE = {
  code: 'internal_error',
  message: 'Server could not be started safely.',
  issues: [],
  retryable: false,
} as const;

/** Adds the configuration options every command accepts (§1.2). */
function withConfigOptions(command: Command): Command {
  command.option('--config <path>', 'TOML configuration file');
  for (const spec of CONFIG_FIELD_SPECS) command.option(`${spec.flag} <value>`, `configuration field ${spec.field} (env ${spec.envVar})`);
  return command;
}

function withFormat(command: Command): Command {
  return command.addOption(new Option('--format <format>', 'output format').choices(['json', 'human']).default('json'));
}

function resolveInput(parsed: Record<string, unknown>): ResolveInput {
  return { options: configOptionsFromParsed(parsed), env: process.env, platform: process.platform, sqliteVersion: sqliteRuntimeVersion() };
}

function finish(outcome: CliOutcome, format: OutputFormat, command: 'serve' | 'config' | 'admin'): void {
  process.exitCode = writeOutcome(outcome, { format, command }, io);
}

export function buildProgram(): Command {
  const program = new Command('aipcs')
    .description('AIPCS: a local-first memory primitive server for AI agents over MCP.')
    .version(PACKAGE_VERSION)
    .exitOverride()
    .showHelpAfterError(false)
    .configureOutput({
      writeOut: (text) => process.stdout.write(text),
      writeErr: (text) => process.stderr.write(text),
    });

  withConfigOptions(
    program
      .command('serve')
      .description('Run the AIPCS MCP server over stdio (profiles: stateless, sqlite).')
      .action(async (parsed: Record<string, unknown>) => {
        const runnable = resolveRunnableConfiguration(resolveInput(parsed));
        if (!runnable.ok) return finish({ ok: false, error: runnable.error }, 'json', 'serve');
        try {
          process.exitCode = await serve(runnable.runtime);
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
  return program;
}

export async function runAipcsCli(argv: readonly string[]): Promise<void> {
  const program = buildProgram();
  try {
    await program.parseAsync([...argv], { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version exit 0; every parser error is invalid input (exit 2).
      process.exitCode = error.exitCode === 0 ? 0 : 2;
      return;
    }
    throw error;
  }
}
