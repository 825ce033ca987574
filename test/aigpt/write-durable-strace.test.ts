// Spec 7.2 and 7.4 as system calls: every file is fsynced before its name is
// published, and the folder is fsynced after. Skipping either passes every
// functional test and loses data only on power loss, so it is observed with
// strace (-y names each fd's path).
import { spawnSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { aigptBin, INITIALIZE_REQUEST, INITIALIZED_NOTIFICATION, makeTempHome, runAigpt, type TempHome, writeConfig } from './support.js';

const hasStrace = spawnSync('strace', ['-V']).status === 0;

describe.runIf(hasStrace)('aigpt writes are durable (strace)', () => {
  let home: TempHome;
  let memoryDir: string;
  beforeEach(async () => {
    home = makeTempHome();
    await writeConfig(home, { did: 'did:plc:xxx', handle: 'ai.syui.ai', path: join(home.root, 'content'), memory: 100 });
    memoryDir = join(home.root, 'content', 'did:plc:xxx', 'ai.syui.gpt.memory');
    // The first run creates the folders and the core record; traced runs below see only their own write.
    expect((await runAigpt(['save-memory', 'first'], home.childEnv)).code).toBe(0);
  });
  afterEach(() => home.cleanup());

  /** The traced calls touching the memory folder, in order. */
  const traced = async (args: string[], input = ''): Promise<string[]> => {
    const trace = join(home.root, 'trace');
    const run = spawnSync('strace', ['-f', '-qq', '-y', '-o', trace, '-e', 'trace=fsync,fdatasync,link,linkat,rename,renameat,renameat2', process.execPath, aigptBin(), ...args], {
      env: home.childEnv, cwd: home.root, encoding: 'utf8', input,
    });
    expect(run.status, run.stderr).toBe(0);
    return (await readFile(trace, 'utf8')).split('\n').filter((line) => line.includes(memoryDir));
  };
  const fsyncOf = (path: RegExp) => (line: string): boolean => /\bf(?:data)?sync\(\d+</.test(line) && path.test(line.slice(line.indexOf('<')));
  const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const folder = (): RegExp => new RegExp(`<${escape(memoryDir)}>`);

  it('save-memory fsyncs the temp file before linking it and the folder after', async () => {
    const calls = await traced(['save-memory', 'traced']);
    const link = calls.findIndex((line) => /\blink(?:at)?\(.*\.tmp-.*\/[0-9a-z]{13}\.json"/.test(line) && !line.includes('= -1'));
    expect(link, calls.join('\n')).toBeGreaterThanOrEqual(0);
    expect(calls.slice(0, link).some(fsyncOf(/\/\.[0-9a-z]{13}\.json\.tmp-[^/]*>/)), calls.join('\n')).toBe(true);
    expect(calls.slice(link + 1).some(fsyncOf(folder())), calls.join('\n')).toBe(true);
  });

  it('save-memory fails when the folder cannot be fsynced (EIO): only unsupported folder syncs are ignored', async () => {
    const run = spawnSync('strace', ['-f', '-qq', '-o', '/dev/null', '-P', memoryDir, '-e', 'trace=fsync', '-e', 'inject=fsync:error=EIO', process.execPath, aigptBin(), 'save-memory', 'x'], {
      env: home.childEnv, cwd: home.root, encoding: 'utf8',
    });
    expect(run.stderr).toMatch(/^aigpt: Failed to write .*\/ai\.syui\.gpt\.memory\/[0-9a-z]{13}\.json: EIO: i\/o error\n$/);
    expect(run.status).toBe(1);
  });

  it('compress fsyncs each staged file and the journal before the journal is renamed into place, and the folder before any staged file is renamed', async () => {
    const lines = [
      INITIALIZE_REQUEST,
      INITIALIZED_NOTIFICATION,
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'compress', arguments: { items: ['new a', 'new b'] } } },
    ];
    const calls = await traced(['server'], lines.map((line) => JSON.stringify(line)).join('\n') + '\n');
    const commit = calls.findIndex((line) => /\brename(?:at2?)?\(.*\.compress-journal\.tmp-.*\/\.compress-journal"/.test(line));
    expect(commit, calls.join('\n')).toBeGreaterThanOrEqual(0);
    const before = calls.slice(0, commit);
    expect(before.filter(fsyncOf(/\.tmp-compress>/)), calls.join('\n')).toHaveLength(2);
    expect(before.some(fsyncOf(/\/\.compress-journal\.tmp-[^/]*>/)), calls.join('\n')).toBe(true);
    // The commit is durable before the first staged file is renamed into place.
    const next = calls.findIndex((line, index) => index > commit && /\brename(?:at2?)?\(/.test(line));
    expect(next, calls.join('\n')).toBeGreaterThan(commit);
    expect(calls.slice(commit + 1, next).some(fsyncOf(folder())), calls.join('\n')).toBe(true);
  });
});
