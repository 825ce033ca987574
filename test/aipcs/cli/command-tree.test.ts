// The `aipcs` command tree and its parser errors through the built CLI
// (operations spec §1.2-1.3): exactly the documented commands, and every
// parser error as argparse prints it (a `usage:` line, then
// `<command>: error: …`) on stderr with exit 2, never an envelope.

import { describe, expect, it } from 'vitest';
import { aipcs } from '../../support/aipcs-admin.js';

const SID = '11111111-2222-4333-8444-555555555555';
const TOP_USAGE = 'aipcs [-h] {serve,config,status,doctor,storage,service,export,import,maintenance} ...';

function expectParserError(args: string[], usage: string, error: RegExp): void {
  const run = aipcs(args);
  expect(run.status).toBe(2);
  expect(run.stdout).toBe('');
  const lines = run.stderr.trimEnd().split('\n');
  expect(lines[0]).toBe(`usage: ${usage}`);
  expect(lines[1]).toMatch(error);
  expect(run.stderr).not.toContain('"ok"');
}

describe('aipcs command tree', () => {
  it('lists exactly the documented commands, without a help command', () => {
    const run = aipcs(['--help']);
    expect(run.status).toBe(0);
    expect(run.stdout.split('\n')[0]).toBe('usage: aipcs [-h] {serve,config,status,doctor,storage,service,export,import,maintenance} ...');
    const commands = [...run.stdout.split('commands:')[1]!.matchAll(/^ {2}(\w+)/gm)].map((match) => match[1]);
    expect(commands).toEqual(['serve', 'config', 'status', 'doctor', 'storage', 'service', 'export', 'import', 'maintenance']);
    expectParserError(['help'], TOP_USAGE, /^aipcs: error: unknown command 'help'/);
    for (const group of ['config', 'storage', 'service', 'maintenance']) {
      const help = aipcs([group, '--help']);
      expect(help.status).toBe(0);
      expect(help.stdout).not.toMatch(/^ {2}help /m);
      expectParserError([group, 'help'], `aipcs ${group} [options] [command]`, new RegExp(`^aipcs ${group}: error: unknown command 'help'`));
    }
    const service = aipcs(['service', '--help']).stdout;
    const texts: [string, string][] = [
      ['suspend', 'Suspend one service.'],
      ['resume', 'Resume one service.'],
      ['archive', 'Archive one service.'],
      ['restore', 'Restore one service.'],
      ['purge', 'Irreversibly purge one archived service.'],
    ];
    for (const [name, text] of texts) {
      expect(service).toMatch(new RegExp(`^ {2}${name} \\[options\\] <SERVICE_ID> +${text.replace('.', '\\.')}$`, 'm'));
    }
  });

  it('requires a command, and a subcommand under each group', () => {
    expectParserError([], TOP_USAGE, /^aipcs: error: /);
    for (const group of ['config', 'storage', 'service', 'maintenance']) {
      expectParserError([group], `aipcs ${group} [options] [command]`, new RegExp(`^aipcs ${group}: error: `));
    }
  });

  it('prints usage and the error for unknown options, excess or missing arguments, and bad choices', () => {
    expectParserError(['status', '--bogus'], 'aipcs status [options]', /^aipcs status: error: unknown option '--bogus'/);
    expectParserError(['status', 'extra'], 'aipcs status [options]', /^aipcs status: error: /);
    expectParserError(['service', 'inspect'], 'aipcs service inspect [options] <SERVICE_ID>', /^aipcs service inspect: error: /);
    expectParserError(['export', SID], 'aipcs export [options] <SERVICE_ID>', /^aipcs export: error: .*--output/);
    expectParserError(['import'], 'aipcs import [options]', /^aipcs import: error: .*--input/);
    expectParserError(['maintenance', 'scan'], 'aipcs maintenance scan [options]', /^aipcs maintenance scan: error: .*--service/);
    expectParserError(['config', 'show', '--format', 'xml'], 'aipcs config show [options]', /^aipcs config show: error: /);
    // A help flag after an unknown command does not turn it into a help page (argparse: invalid choice, exit 2).
    expectParserError(['nope', '--help'], TOP_USAGE, /^aipcs: error: unknown command 'nope'/);
    expectParserError(['service', 'nope', '-h'], 'aipcs service [options] [command]', /^aipcs service: error: unknown command 'nope'/);
    expectParserError(['serve', '--format', 'json'], 'aipcs serve [options]', /^aipcs serve: error: unknown option '--format'/);
    expectParserError(['service', 'purge', SID, '--receipt', SID, '--override'], 'aipcs service purge [options] <SERVICE_ID>', /^aipcs service purge: error: .*cannot be used with/);
  });

  it('shows an echoed argument with its unprintable characters escaped (as argparse repr does), never raw on the terminal', () => {
    const cases: [string[], string, string][] = [
      [['\u001b]0;owned\u0007'], TOP_USAGE, "aipcs: error: unknown command '\\x1b]0;owned\\x07'"],
      [['service', 'x\nforged line'], 'aipcs service [options] [command]', "aipcs service: error: unknown command 'x\\nforged line'"],
      [['status', '--format', '\u001b[31mred\u202e'], 'aipcs status [options]', "aipcs status: error: option '--format <format>' argument '\\x1b[31mred\\u202e' is invalid. Allowed choices are json, human."],
      [['status', '--bo\u009bgus=1'], 'aipcs status [options]', "aipcs status: error: unknown option '--bo\\x9bgus'"],
    ];
    for (const [args, usage, error] of cases) {
      const run = aipcs(args);
      expect(run.status).toBe(2);
      expect(run.stderr).toBe(`usage: ${usage}\n${error}\n`);
    }
    // A suggestion keeps its own line.
    expect(aipcs(['status', '--formt\u001b']).stderr).toMatch(/unknown option '--formt\\x1b'\n\(Did you mean --format\?\)\n$/);
  });
});
