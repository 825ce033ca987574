// A line the client sends that is a response (it carries `result` or
// `error`, as an answer to a server request would) gets no answer, so
// `aigpt server` must not hold the lines after it back waiting for one
// (spec 5.1: each request answered before the next is looked at; a
// response is no request). (mutation review K)

import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeTempHome, runAigpt, type TempHome, writeConfig } from './support.js';

describe('aigpt server and response lines from the client', () => {
  let home: TempHome;
  beforeEach(async () => {
    home = makeTempHome();
    await writeConfig(home, { path: join(home.root, 'content') });
  });
  afterEach(() => home.cleanup());

  it('goes on at once after a response line, answering the next request', async () => {
    const input = [
      { jsonrpc: '2.0', id: 41, result: {} },
      { jsonrpc: '2.0', id: 42, error: { code: -1, message: 'no' } },
      { jsonrpc: '2.0', id: 1, method: 'ping' },
    ].map((line) => `${JSON.stringify(line)}\n`).join('');
    const started = Date.now();
    const run = await runAigpt(['server'], home.childEnv, { input });
    // The gate waits 30 s for an answer that never comes; a served line takes well under that.
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(run.code).toBe(0);
    expect(run.stdout.trimEnd().split('\n').map((line) => (JSON.parse(line) as { id: number }).id)).toEqual([1]);
  }, 60_000);
});
