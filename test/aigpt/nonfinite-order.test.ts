// Spec 5.1 (docs/decisions-aigpt.md): requests are served one at a time, in
// the order read, each answered before the next is looked at. The shared
// transport reads Python's NaN, Infinity and -Infinity tokens (keepNonFinite
// Floats) and serves a request holding one, but aigpt's answer gate, which
// holds the next line back, recognised requests with JSON.parse: such a
// request was not waited for, so a read_memory sent after a save_memory
// (whose ignored extra argument held NaN) ran first and did not see it.

import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeTempHome, runAigpt, type TempHome, writeConfig } from './support.js';

describe('aigpt server: a request holding a non-finite token keeps its turn', () => {
  let home: TempHome;

  beforeEach(async () => {
    home = makeTempHome();
    await writeConfig(home, { path: join(home.root, 'content'), memory: 10 });
  });

  afterEach(() => home.cleanup());

  it.each(['NaN', 'Infinity', '-Infinity'])('answers a save_memory with an extra %s argument before the read_memory after it', async (token) => {
    const lines = [
      '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}',
      '{"jsonrpc":"2.0","method":"notifications/initialized"}',
      `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"save_memory","arguments":{"content":"first","extra":${token}}}}`,
      '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_memory","arguments":{}}}',
    ];
    const run = await runAigpt(['server'], home.childEnv, { input: lines.map((line) => `${line}\n`).join('') });
    expect(run.code).toBe(0);
    const answers = run.stdout.trimEnd().split('\n').map((line) => JSON.parse(line) as { id: number; result?: { content: { text: string }[] } });
    expect(answers.map((answer) => answer.id)).toEqual([0, 1, 2]);
    expect(JSON.parse(answers[2]?.result?.content[0]?.text ?? '')).toMatchObject({ count: 1 });
  });

  it('answers a line that is not valid UTF-8 and holds NaN with -32600, and goes on', async () => {
    const input = Buffer.concat([
      Buffer.from('{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n'),
      Buffer.from('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"save_memory","arguments":{"content":"'),
      Buffer.from([0xff]),
      Buffer.from('","extra":NaN}}}\n'),
      Buffer.from('{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"read_memory","arguments":{}}}\n'),
    ]);
    const run = await runAigpt(['server'], home.childEnv, { input });
    expect(run.code, run.stderr).toBe(0);
    const answers = run.stdout.trimEnd().split('\n').map((line) => JSON.parse(line) as { id: number; error?: { code: number } });
    expect(answers.map((answer) => answer.id)).toEqual([0, 7, 8]);
    expect(answers[1]?.error?.code).toBe(-32600);
  });
});
