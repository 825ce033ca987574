// The `aipcs` command tree. Each command is a thin edge over compose.ts; this
// file owns parsing, help texts and exit codes, nothing else.

import { Command, CommanderError } from 'commander';
import { PACKAGE_VERSION } from '../version.js';
import { serveStdioProfile } from '../compose.js';

export async function runAipcsCli(argv: readonly string[]): Promise<void> {
  const program = new Command('aipcs')
    .description('AIPCS: a local-first memory primitive server for AI agents over MCP.')
    .version(PACKAGE_VERSION)
    .exitOverride()
    .configureOutput({
      writeOut: (text) => process.stdout.write(text),
      writeErr: (text) => process.stderr.write(text),
    });

  program
    .command('serve')
    .description('Run the AIPCS MCP server (stdio).')
    .option('--profile <profile>', 'stateless (default)')
    .action(async (options: { profile?: string }) => {
      const profile = options.profile ?? process.env['AIPCS_PROFILE'] ?? 'stateless';
      process.exitCode = await serveStdioProfile(profile);
    });

  try {
    await program.parseAsync([...argv], { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) {
      process.exitCode = error.exitCode === 0 ? 0 : 2;
      return;
    }
    throw error;
  }
}
