// A client that closes the server's stdout but keeps stdin open can take no
// more answers: `aigpt server` must end (its session is over), not keep
// running, reading requests it can never answer, until stdin ends.
// (mutation review Q: G11)

import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { aigptBin, makeTempHome, type TempHome, writeConfig } from './support.js';

describe('aigpt server whose stdout the client closed', () => {
  let home: TempHome;
  beforeEach(async () => {
    home = makeTempHome();
    await writeConfig(home, { path: join(home.root, 'content') });
  });
  afterEach(() => home.cleanup());

  it('exits although stdin stays open', async () => {
    const child = spawn(process.execPath, [aigptBin(), 'server'], { env: home.childEnv, cwd: tmpdir(), stdio: 'pipe' });
    // Closing our end makes the server's first answer fail with EPIPE.
    child.stdout.destroy();
    child.stdin.on('error', () => undefined);
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
    child.stdin.write('{"jsonrpc":"2.0","id":1,"method":"ping"}\n');
    const timeout = new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), 15_000).unref());
    const outcome = await Promise.race([exited, timeout]);
    if (outcome === 'still running') child.kill('SIGKILL');
    // stdin is still open here: only the closed stdout can have ended it.
    expect(child.stdin.writableEnded).toBe(false);
    expect(outcome, `stderr: ${stderr}`).toEqual({ code: 0, signal: null });
    child.stdin.destroy();
  }, 30_000);
});
