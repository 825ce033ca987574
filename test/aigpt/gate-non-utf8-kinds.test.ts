// Lines that are not valid UTF-8, as `aigpt server` treats them (docs: a
// line that is not valid UTF-8 is reported on stderr and skipped, a request
// id in it gets -32600; a line longer than 4 MiB gets -32600 with the
// message `Invalid Request: the input line is longer than 4194304 bytes`).
// (mutation review Q: G08, G15)

import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeTempHome, runAigpt, type TempHome, writeConfig } from './support.js';

const ping = (id: number): Buffer => Buffer.from(`{"jsonrpc":"2.0","id":${id},"method":"ping"}\n`);
const withBadByte = (before: string, after: string): Buffer => Buffer.concat([Buffer.from(before), Buffer.from([0xff]), Buffer.from(after)]);

describe('aigpt server and input lines that are not valid UTF-8', () => {
  let home: TempHome;
  beforeEach(async () => {
    home = makeTempHome();
    await writeConfig(home, { path: join(home.root, 'content') });
  });
  afterEach(() => home.cleanup());

  it('a response line from the client (an id, no method) is skipped, not answered', async () => {
    const input = Buffer.concat([withBadByte('{"jsonrpc":"2.0","id":5,"result":{"text":"', '"}}\n'), withBadByte('{"jsonrpc":"2.0","id":6,"error":{"code":1,"message":"', '"}}\n'), ping(1)]);
    const run = await runAigpt(['server'], home.childEnv, { input });
    expect(run.code).toBe(0);
    expect(run.stdout.trimEnd().split('\n').map((line) => (JSON.parse(line) as { id: number }).id)).toEqual([1]);
    expect(run.stderr.match(/dropped an input line that is not valid UTF-8/g)).toHaveLength(2);
  }, 30_000);

  it('a request longer than 4 MiB that is also not UTF-8 is refused for its length', async () => {
    const pad = 'a'.repeat(4 * 1024 * 1024);
    const input = Buffer.concat([withBadByte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"save_memory","arguments":{"content":"${pad}`, '"}}}\n'), ping(4)]);
    const run = await runAigpt(['server'], home.childEnv, { input });
    expect(run.code).toBe(0);
    expect(run.stdout.trimEnd().split('\n').map((line) => JSON.parse(line) as unknown)).toEqual([
      { jsonrpc: '2.0', id: 3, error: { code: -32600, message: 'Invalid Request: the input line is longer than 4194304 bytes' } },
      { jsonrpc: '2.0', id: 4, result: {} },
    ]);
  }, 60_000);
});
