// Fuzz finding: a request line that starts with a byte order mark (a Windows
// pipe may write one) is served like any other, and the stdio gate waits for
// its answer before the next line, so a read_memory piped after a
// BOM-prefixed save_memory sees that memory (the gate took such a line for
// no request and let the read run concurrently with the save).

import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { INITIALIZE_REQUEST, INITIALIZED_NOTIFICATION, makeTempHome, runAigpt, type TempHome, writeConfig } from './support.js';

describe('aigpt server: a line starting with a byte order mark', () => {
  let home: TempHome;

  beforeEach(async () => {
    home = makeTempHome();
    await writeConfig(home, { path: join(home.root, 'content') });
  });

  afterEach(() => home.cleanup());

  it('is served in order, before the line after it', async () => {
    const lines = [
      JSON.stringify(INITIALIZE_REQUEST),
      JSON.stringify(INITIALIZED_NOTIFICATION),
      '\ufeff' + JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'save_memory', arguments: { content: 'kept' } } }),
      JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'read_memory', arguments: {} } }),
    ];
    const run = await runAigpt(['server'], home.childEnv, { input: `${lines.join('\n')}\n` });
    expect(run.code).toBe(0);
    const answers = run.stdout.trimEnd().split('\n').map((line) => JSON.parse(line) as { id: number; result: { content: { text: string }[] } });
    expect(answers.map((answer) => answer.id)).toEqual([1, 2, 3]);
    expect(answers[1]?.result.content[0]?.text).toBe('{"count":1,"limit":100,"success":true}');
    expect(JSON.parse(answers[2]?.result.content[0]?.text ?? '{}')).toMatchObject({ count: 1 });
  });
});
