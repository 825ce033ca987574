// aigpt's server notes on stderr do not depend on AIPCS's environment: the
// shared logger used to read AIPCS_LOG_LEVEL for every product, so
// `AIPCS_LOG_LEVEL=silent` (set for an AIPCS server in the same shell)
// silenced aigpt's notes too, and nothing in aigpt's docs names it.

import { afterEach, describe, expect, it } from 'vitest';
import { makeTempHome, runAigpt, type TempHome } from './support.js';

describe('aigpt server logging', () => {
  let home: TempHome | undefined;
  afterEach(() => home?.cleanup());

  it('notes a dropped input line on stderr whatever AIPCS_LOG_LEVEL says', async () => {
    home = makeTempHome();
    for (const level of ['silent', 'error', 'debug']) {
      const run = await runAigpt(['server'], { ...home.childEnv, AIPCS_LOG_LEVEL: level }, { input: 'not json\n' });
      expect(run.code, level).toBe(0);
      expect(run.stdout, level).toBe('');
      expect(run.stderr, level).toBe('aigpt warn: dropped a malformed input line\n');
    }
  });

  it('says a line it answered was answered, not dropped', async () => {
    home = makeTempHome();
    const input = Buffer.concat([
      Buffer.from('{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":"'),
      Buffer.from([0xff]),
      Buffer.from(`"}}\n{"jsonrpc":"2.0","id":8,"method":"ping","params":{"x":${'['.repeat(5000)}${']'.repeat(5000)}}}\n`),
    ]);
    const run = await runAigpt(['server'], home.childEnv, { input });
    expect(run.code).toBe(0);
    expect(run.stdout.split('\n').filter(Boolean).map((line) => (JSON.parse(line) as { id: number; error: { code: number } })).map(({ id, error }) => [id, error.code])).toEqual([
      [7, -32600],
      [8, -32600],
    ]);
    expect(run.stderr).toBe(
      'aigpt warn: answered an input line that is not valid UTF-8 as an invalid request\naigpt warn: answered an input line beyond the JSON bounds as an invalid request\n',
    );
  });
});
