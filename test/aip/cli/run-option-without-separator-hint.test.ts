// `aip run ls -la`: commander reads `-la` as an option of aip run and refuses
// it (a usage error, exit 2, spec 9.2). The message names the way out: the
// command goes after `--` (spec 9.3 synopsis). A typo in aip's own options
// before a `--` keeps the plain message. `aip run` given no command at all
// said only "missing required argument 'argv'", naming an internal name.
import { describe, expect, it } from 'vitest';
import { aip, requireBuiltBin } from '../support/cli.js';
import { tempDir } from '../support/temp.js';

requireBuiltBin();

const HINT = ' (put the command after --: aip run [options] -- ARGV...)';

describe('aip run given the command without --', () => {
  it('names -- in the usage error, in text and JSON, and runs nothing', async () => {
    const dir = await tempDir();
    expect((await aip(['init'], { cwd: dir })).code).toBe(0);

    const text = await aip(['run', 'ls', '-la'], { cwd: dir });
    expect(text.code).toBe(2);
    expect(text.stderr).toBe(`aip: usage: unknown option '-la'${HINT}\n`);
    expect(text.text).toBe('');

    const json = await aip(['--repo', dir, '--format', 'json', 'run', 'grep', '-q', 'x', 'file'], { cwd: dir });
    expect(json.code).toBe(2);
    expect(JSON.parse(json.text)).toEqual({ error: { code: 'usage', message: `unknown option '-q'${HINT}` } });

    const typo = await aip(['run', '--bogus', '--', 'ls'], { cwd: dir });
    expect(typo.code).toBe(2);
    expect(typo.stderr).toBe("aip: usage: unknown option '--bogus'\n");

    for (const args of [['run'], ['run', '--state', 'HEAD'], ['run', '--keep', '--']]) {
      const missing = await aip(args, { cwd: dir });
      expect(missing.code, args.join(' ')).toBe(2);
      expect(missing.stderr, args.join(' ')).toBe('aip: usage: no command to run: give it after --: aip run [options] -- ARGV...\n');
    }

    // Nothing was run: the repository holds no evidence.
    const log = await aip(['log'], { cwd: dir });
    expect(log.text).toMatch(/^state [0-9a-f]{64} \(root\)\n$/);
  });
});
