// `aigpt --help` names what `aigpt` alone does (docs/aigpt.md, spec 4.1:
// "aigpt  show config and status"), and that command does it.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeTempHome, runAigpt, type TempHome } from './support.js';

describe('aigpt --help', () => {
  let home: TempHome;
  beforeEach(() => {
    home = makeTempHome();
  });
  afterEach(() => home.cleanup());

  it('says that without a command it shows the config and status', async () => {
    const help = await runAigpt(['--help'], home.childEnv);
    expect(help.code).toBe(0);
    expect(help.stdout.split('\n').slice(0, 4)).toEqual([
      'Usage: aigpt [options] [command]',
      '',
      'AI memory MCP server: flat memory as ATProto record files.',
      'Without a command: show the config and status.',
    ]);
    const status = await runAigpt([], home.childEnv);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/^aigpt - AI memory MCP server\n\nconfig: .*\n/);
    expect(status.stdout).toMatch(/\nrecords: 0\/100\n$/);
  });

  it('save-memory --help says that a content starting with - needs -- before it, as docs/aigpt.md does', async () => {
    const help = await runAigpt(['save-memory', '--help'], home.childEnv);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^ {2}content +the memory element, may be empty \(-- before one starting with -\)$/m);
    expect((await runAigpt(['save-memory', '-5'], home.childEnv)).code).toBe(2);
    const saved = await runAigpt(['save-memory', '--', '-5'], home.childEnv);
    expect(saved).toMatchObject({ code: 0, stdout: 'Saved. (1 records)\n' });
  });
});
