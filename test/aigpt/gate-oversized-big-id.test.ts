// An oversized request line (over 4 MiB) is answered -32600 with its id
// exactly as sent, an integer beyond 2^53 too; the gate in front of the
// transport waits for that answer before it serves the next line and must
// recognise it (the answer's id read back as a JSON number), or it holds
// the next request back for its whole answer wait (30 s).
// (mutation review Q: G01)

import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeTempHome, runAigpt, type TempHome, writeConfig } from './support.js';

describe('aigpt server: an oversized request with an id beyond 2^53', () => {
  let home: TempHome;
  beforeEach(async () => {
    home = makeTempHome();
    await writeConfig(home, { path: join(home.root, 'content') });
  });
  afterEach(() => home.cleanup());

  it('is answered and the next request is not held back', async () => {
    const pad = 'a'.repeat(4 * 1024 * 1024 + 70_000);
    const input = `{"jsonrpc":"2.0","id":9007199254740993,"method":"ping","params":{"pad":"${pad}"}}\n{"jsonrpc":"2.0","id":2,"method":"ping"}\n`;
    const started = Date.now();
    const run = await runAigpt(['server'], home.childEnv, { input });
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(
      '{"jsonrpc":"2.0","id":9007199254740993,"error":{"code":-32600,"message":"Invalid Request: the input line is longer than 4194304 bytes"}}\n{"result":{},"jsonrpc":"2.0","id":2}\n',
    );
  }, 60_000);
});
