// A memory text that starts with `-` ("-5 degrees outside", "--force is
// risky") is refused on the command line like an unknown option (usage error,
// exit 2, spec 4.5/4.7; the reference's parser does the same). The message
// names the way out as the reference's parser does: put `--` before it.
// Nothing is written; with `--` the text is saved as given.
import { promises as fs } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeTempHome, runAigpt, type TempHome } from './support.js';

describe('aigpt save-memory with a text that starts with -', () => {
  let home: TempHome;
  beforeEach(() => {
    home = makeTempHome();
  });
  afterEach(() => home.cleanup());

  it('is a usage error that says to use --, and -- saves it', async () => {
    for (const text of ['-5 degrees outside', '--force is risky', '-x']) {
      const result = await runAigpt(['save-memory', text], home.childEnv);
      expect(result.code, text).toBe(2);
      expect(result.stdout, text).toBe('');
      expect(result.stderr, text).toBe(`error: unexpected argument '${text}' found\n\n  tip: to pass '${text}' as a value, use '-- ${text}'\n(run aigpt --help for usage)\n`);
    }
    await expect(fs.stat(home.configHome)).rejects.toThrow();

    expect(await runAigpt(['save-memory', '--', '-5 degrees outside'], home.childEnv)).toMatchObject({ code: 0, stdout: 'Saved. (1 records)\n' });
    expect((await runAigpt(['read-memory'], home.childEnv)).stdout).toContain('"text": "-5 degrees outside"');
    // Help stays help.
    expect((await runAigpt(['save-memory', '-h'], home.childEnv)).code).toBe(0);
  });
});
