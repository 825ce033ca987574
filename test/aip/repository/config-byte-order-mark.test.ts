// `.aip/config.json` beginning with a byte order mark (what some editors
// write) opens like the same file without it, as `aip put --from json` and
// `.aipignore` already read one (RFC 8259 section 8.1 lets a parser ignore
// it; spec 7.2 is silent). Before, every command failed with repo.config
// "invalid JSON: The JSON document is malformed." Decision D45.

import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/aip/repository/config.js';
import { aip } from '../support/cli.js';
import { tempDir } from '../support/temp.js';

describe('.aip/config.json with a byte order mark', () => {
  it('is read like the file without it; only one leading mark is ignored', () => {
    const text = '{"format":"aip-repository","version":1,"max_object_bytes":2097152}';
    expect(parseConfig(`\ufeff${text}`)).toMatchObject({ ok: true, value: { maxObjectBytes: 2_097_152 } });
    expect(parseConfig(`\ufeff\ufeff${text}`)).toMatchObject({ ok: false, error: { code: 'repo.config' } });
    expect(parseConfig(` \ufeff${text}`)).toMatchObject({ ok: false, error: { code: 'repo.config' } });
  });

  it('lets the CLI open the repository', async () => {
    const root = await tempDir();
    expect((await aip(['init', root], { cwd: root })).code).toBe(0);
    const config = join(root, '.aip', 'config.json');
    await writeFile(config, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), await readFile(config)]));
    const status = await aip(['--format', 'json', 'status'], { cwd: root });
    expect(status.stderr).toBe('');
    expect(status.code).toBe(0);
  });
});
