// `aip … --help` says what docs/aip.md says of the values the options take:
// a duration without a unit is seconds, sizes are powers of 1024, and times
// must already be UTC with nine fractional digits. Each claim is held to
// what the command does with such a value.

import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { aip, requireBuiltBin } from '../support/cli.js';
import { tempDir } from '../support/temp.js';

/** The help text of one option, its wrapped lines joined. */
function optionHelp(help: string, option: string): string {
  const lines = help.split('\n');
  const start = lines.findIndex((line) => line.startsWith(`  ${option} `));
  expect(start).toBeGreaterThanOrEqual(0);
  const parts = [lines[start]!.slice(2 + option.length).trim()];
  for (const line of lines.slice(start + 1)) {
    if (!/^ {4,}\S/.test(line)) break;
    parts.push(line.trim());
  }
  return parts.join(' ');
}

describe('aip option help', () => {
  it('run: --timeout without a unit is seconds, --output-limit in powers of 1024', async () => {
    requireBuiltBin();
    const dir = await tempDir();
    const help = (await aip(['run', '--help'], { cwd: dir })).text;
    expect(optionHelp(help, '--timeout <duration>')).toBe('deadline: an integer with ns, us, ms, s, m or h, seconds without a unit (default from config)');
    expect(optionHelp(help, '--output-limit <bytes>')).toBe('bytes kept per stream: an integer with an optional K, M or G (powers of 1024; default from config)');

    expect((await aip(['init'], { cwd: dir })).code).toBe(0);
    // `--timeout 1` kills a command that sleeps for 3 s: one second, not one nanosecond or minute.
    const started = Date.now();
    const slow = await aip(['--format', 'json', 'run', '--timeout', '1', '--', 'sleep', '3'], { cwd: dir });
    expect(slow.code).toBe(4);
    expect(JSON.parse(slow.text).data.termination).toBe('timeout');
    // Not before one second (a nanosecond would end it at once); the timeout termination shows it was not a minute.
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    const quick = await aip(['--format', 'json', 'run', '--timeout', '1', '--output-limit', '1K', '--', 'sh', '-c', 'head -c 1010 /dev/zero; head -c 1030 /dev/zero >&2'], { cwd: dir });
    expect(quick.code).toBe(0);
    const evidence = JSON.parse(quick.text).data;
    expect(evidence.termination).toBe('exited');
    // 1K is 1024 bytes: 1010 bytes fit, 1030 do not.
    expect(evidence.stdout.truncated).toBe(false);
    expect(evidence.stderr.truncated).toBe(true);
  });

  it('intent, snapshot, decide and report: times are UTC with nine fractional digits', async () => {
    requireBuiltBin();
    const dir = await tempDir();
    for (const [command, option] of [
      ['intent', '--created-at <time>'],
      ['snapshot', '--created-at <time>'],
      ['decide', '--created-at <time>'],
      ['report', '--recorded-at <time>'],
    ] as const) {
      const help = (await aip([command, '--help'], { cwd: dir })).text;
      expect(optionHelp(help, option)).toMatch(/^(creation|recording) time, UTC with nine fractional digits \(default now\)$/);
    }
    expect((await aip(['init'], { cwd: dir })).code).toBe(0);
    const six = await aip(['intent', '--title', 't', '--goal', 'g', '--created-at', '2026-01-01T00:00:00.000000Z'], { cwd: dir });
    expect(six.code).toBe(2);
    const nine = await aip(['intent', '--title', 't', '--goal', 'g', '--created-at', '2026-01-01T00:00:00.000000000Z'], { cwd: dir });
    expect(nine.code).toBe(0);
    // A well-shaped time on a day that does not exist (spec 3.3, P4) is not told to "look like" the shape it has.
    const february30 = await aip(['report', '--kind', 'k', '--command', 'c', '--result', 'pass', '--recorded-at', '2026-02-30T00:00:00.000000000Z'], { cwd: dir });
    expect(february30.code).toBe(2);
    expect(february30.stderr).toBe(
      'aip: usage: --recorded-at "2026-02-30T00:00:00.000000000Z" is not a time: UTC with nine fractional digits on a date and time that exist, like 2026-01-01T00:00:00.000000000Z\n',
    );
  });

  it('init and verify say all they cover: init also writes .aipignore, verify also checks HEAD (docs/aip.md)', async () => {
    requireBuiltBin();
    const dir = await tempDir();
    const help = (await aip(['--help'], { cwd: dir })).text.replace(/\s+/g, ' ');
    expect(help).toContain('init [dir] create DIR/.aip with its config, the root state and HEAD, and DIR/.aipignore if absent');
    const verify = (await aip(['verify', '--help'], { cwd: dir })).text;
    expect(verify.replace(/\s+/g, ' ')).toContain('full verification from bytes: the given objects, or every object, the index and HEAD');
    expect(optionHelp(verify, '--all')).toBe('every stored object, the reverse index and HEAD (default without IDs)');
    expect((await aip(['init'], { cwd: dir })).code).toBe(0);
    await writeFile(join(dir, '.aip', 'HEAD'), `${'0'.repeat(64)}\n`);
    const checked = await aip(['verify'], { cwd: dir });
    expect(checked.code).toBe(1);
    expect(checked.text).toMatch(/^invalid HEAD /m);
  });

  it('options a command cannot run without say so in its help, and leaving one out is a usage error', async () => {
    requireBuiltBin();
    const dir = await tempDir();
    const required: [string, string, string][] = [
      ['intent', '--title <text>', '(required)'],
      ['intent', '--goal <text>', '(required)'],
      ['snapshot', '--title <text>', '(required without --intent)'],
      ['snapshot', '--goal <text>', '(required without --intent)'],
      ['op', '--intent <id>', '(required)'],
      ['checkout', '--into <dir>', '(required)'],
      ['report', '--kind <kind>', '(required)'],
      ['report', '--command <text>', '(required)'],
      ['report', '--result <result>', '(required)'],
      ['decide', '--question <text>', '(required)'],
      ['decide', '--decision <text>', '(required)'],
      ['decide', '--rationale <text>', '(required)'],
    ];
    for (const [command, option, note] of required) {
      const help = (await aip([command, '--help'], { cwd: dir })).text;
      expect(optionHelp(help, option), `${command} ${option}`).toContain(note);
    }
    expect((await aip(['init'], { cwd: dir })).code).toBe(0);
    for (const args of [['intent', '--title', 't'], ['snapshot', '--goal', 'g'], ['op'], ['checkout', 'HEAD'], ['report', '--kind', 'k', '--command', 'c'], ['decide', '--question', 'q', '--decision', 'd']]) {
      expect((await aip(args, { cwd: dir })).code, args.join(' ')).toBe(2);
    }
  });
});
