// Spec 5.1: requests are answered in the order they were read. A request
// line longer than the input bound (4 MiB) whose id shows at its start is
// answered -32600 by the transport as the line overflows; the short request
// after it must still be answered after it, so the server holds the rest of
// the input back until that answer is out. All lines are written at once, so
// the server reads the end of a long line and the next request together.
// Several pairs, as one pair may be read in pieces that hide the order.
// The same for an oversized request whose id is its last member, answered
// once the line ends. (mutation review Q: G13, G14)

import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeTempHome, runAigpt, type TempHome, writeConfig } from './support.js';

describe('aigpt server: an oversized request then a short one', () => {
  let home: TempHome;
  beforeEach(async () => {
    home = makeTempHome();
    await writeConfig(home, { path: join(home.root, 'content') });
  });
  afterEach(() => home.cleanup());

  it('answers them in the order they were sent', async () => {
    const pad = 'a'.repeat(4 * 1024 * 1024 + 70_000);
    const ids = [1, 3, 5, 7];
    const input = ids.map((id) => `{"jsonrpc":"2.0","id":${id},"method":"ping","params":{"pad":"${pad}"}}\n{"jsonrpc":"2.0","id":${id + 1},"method":"ping"}\n`).join('');
    const run = await runAigpt(['server'], home.childEnv, { input });
    expect(run.code).toBe(0);
    const answers = run.stdout.trimEnd().split('\n').map((line) => JSON.parse(line) as { id: number; error?: { code: number } });
    expect(answers.map((answer) => answer.id)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    for (const answer of answers) expect(answer.error?.code).toBe(answer.id % 2 === 1 ? -32600 : undefined);
  }, 60_000);

  it('answers them in order when the id of the long line is at its end', async () => {
    const pad = 'a'.repeat(4 * 1024 * 1024 + 70_000);
    const input = `{"jsonrpc":"2.0","method":"ping","params":{"pad":"${pad}"},"id":1}\n{"jsonrpc":"2.0","id":2,"method":"ping"}\n`;
    const run = await runAigpt(['server'], home.childEnv, { input });
    expect(run.code).toBe(0);
    const answers = run.stdout.trimEnd().split('\n').map((line) => JSON.parse(line) as { id: number; error?: { code: number } });
    expect(answers.map((answer) => answer.id)).toEqual([1, 2]);
    expect(answers[0]?.error?.code).toBe(-32600);
  }, 60_000);
});
