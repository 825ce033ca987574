// Texts the CLI quotes back or shows on one line, at their Unicode edges:
// an error message that cuts a long argument never cuts between the halves
// of a surrogate pair (it showed `\ud83d`, half a character nobody typed),
// and status/log lines escape the bidirectional controls as they escape the
// control characters (a file `evil\u202etxt.exe` was shown raw, which a
// terminal draws as `evilexe.txt`). D42.

import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { oneLine, quoted } from '../../../src/aip/core/quote.js';
import { aip } from '../support/cli.js';
import { tempDir } from '../support/temp.js';

describe('quoted and one-line texts', () => {
  it('cuts a long quoted text on a character boundary', () => {
    const emoji = '\u{1F600}';
    for (let prefix = 70; prefix <= 80; prefix++) {
      const text = 'a'.repeat(prefix) + emoji.repeat(10);
      const shown = JSON.parse(quoted(text)) as string;
      expect(shown.isWellFormed(), String(prefix)).toBe(true);
      expect(shown.endsWith('...')).toBe(true);
      expect(text.startsWith(shown.slice(0, -3))).toBe(true);
    }
    expect(quoted('x'.repeat(80))).toBe(JSON.stringify('x'.repeat(80)));
  });

  it('escapes bidirectional controls on one line and keeps other text', () => {
    expect(oneLine('evil\u202etxt.exe')).toBe('evil\\u202etxt.exe');
    expect(oneLine('\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069')).toBe('\\u202a\\u202b\\u202c\\u202d\\u2066\\u2067\\u2068\\u2069');
    expect(oneLine('caf\u00e9 \u{1F600} \u200b \\ \u00a0')).toBe('caf\u00e9 \u{1F600} \u200b \\ \u00a0');
  });

  it('shows them so through the CLI', async () => {
    const root = await tempDir();
    expect((await aip(['init', root], { cwd: root })).code).toBe(0);
    await writeFile(join(root, 'evil\u202etxt.exe'), 'x');
    const status = await aip(['status'], { cwd: root });
    expect(status.text).toContain('A evil\\u202etxt.exe\n');
    const json = await aip(['--format', 'json', 'status'], { cwd: root });
    expect(json.text).toContain('"path":"evil\u202etxt.exe"');
    const refused = await aip(['show', `${'a'.repeat(76)}${'\u{1F600}'.repeat(5)}`], { cwd: root });
    expect(refused.code).toBe(2);
    expect(refused.stderr).not.toMatch(/\\ud83d/i);
    expect(refused.stderr).toContain(`"${'a'.repeat(76)}..."`);
  });
});
