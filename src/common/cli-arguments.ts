// Command-line argument handling shared by the CLIs (commander).

import type { Command } from 'commander';

/**
 * The arguments to hand to commander, so that a word naming no subcommand of
 * the group it stands under is reported as an unknown command (exit 2), as
 * argparse and clap (the references' parsers) report it:
 *
 * - `aipcs nope --help`: cut after the word; commander alone would print the
 *   group's help and exit 0;
 * - with a `help` command (`helpCommand`), `aigpt help nope` is `aigpt nope`
 *   (commander printed the whole help with exit 2 and no message), and
 *   `aigpt help help` and `aigpt help --help` (or `-h`) are `aigpt --help`
 *   (commander refused them, the latter with the help on stderr and exit 2).
 *
 * Options before the word and operands of a command without subcommands
 * leave the arguments as they are.
 */
export function argumentsUpToUnknownCommand(program: Command, argv: readonly string[], options: { readonly helpCommand: boolean }): readonly string[] {
  const find = (group: Command, word: string | undefined): Command | undefined =>
    group.commands.find((candidate) => candidate.name() === word || candidate.aliases().includes(word ?? ''));
  let command = program;
  for (let index = 0; index < argv.length; index++) {
    const word = argv[index] as string;
    if (word.startsWith('-') || command.commands.length === 0) return argv;
    if (options.helpCommand && word === 'help') {
      const topic = argv[index + 1];
      if (topic === 'help' || topic === '-h' || topic === '--help') return [...argv.slice(0, index), '--help'];
      if (topic === undefined || topic.startsWith('-') || find(command, topic) !== undefined) return argv;
      return [...argv.slice(0, index), topic];
    }
    const next = find(command, word);
    if (next === undefined) return argv.slice(0, index + 1);
    command = next;
  }
  return argv;
}
