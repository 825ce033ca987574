// `aigpt read-memory | less`: the dump goes only as fast as its reader
// takes it (entry.ts: a pipe on Node queues every write in memory; without
// waiting, a big folder queued gigabytes and failed with ENOBUFS). Seen from
// outside: while the reader does not read, read-memory reads no further, so
// files removed meanwhile are not printed.
// (mutation review Q: E05)

import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { aigptBin, makeTempHome, seedOrderMemory, type TempHome, writeConfig } from './support.js';

describe('aigpt read-memory and a reader that does not read', () => {
  let home: TempHome;
  beforeEach(() => {
    home = makeTempHome();
  });
  afterEach(() => home.cleanup());

  it('reads no further than its reader has taken', async () => {
    await writeConfig(home, { path: join(home.root, 'c') });
    const memoryDir = join(home.root, 'c', 'self', 'ai.syui.gpt.memory');
    await fs.mkdir(memoryDir, { recursive: true });
    const count = 200;
    const text = 'm'.repeat(64 * 1024);
    for (let i = 0; i < count; i++) {
      await fs.writeFile(join(memoryDir, `note-${String(i).padStart(3, '0')}.json`), seedOrderMemory('self', 'x', `${i} ${text}`));
    }
    const child = spawn(process.execPath, [aigptBin(), 'read-memory'], { env: home.childEnv, cwd: home.root, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const chunks: Buffer[] = [];
    // Take the first chunk, then stop reading: the pipe fills up.
    await new Promise<void>((resolve) =>
      child.stdout.once('data', (chunk: Buffer) => {
        chunks.push(chunk);
        child.stdout.pause();
        resolve();
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 1500));
    await Promise.all((await fs.readdir(memoryDir)).map((name) => fs.rm(join(memoryDir, name), { force: true })));
    child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.stdout.resume();
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    const printed = Buffer.concat(chunks).toString('utf8').split('\n}\n').filter((part) => part !== '').length;
    expect(code).toBe(0);
    expect(printed).toBeGreaterThan(0);
    expect(printed).toBeLessThan(count / 2);
    expect(stderr).toBe('');
  }, 60_000);
});
