// A stdout that fails asynchronously for another reason than a reader that
// went away (EPIPE) is a runtime failure (exit 1, named on stderr). A file
// such as /dev/full fails inside the write call itself; a socket fails
// later, in the 'error' event: here stdout is a TCP connection the peer has
// reset, so the child's writes get ECONNRESET. read-memory then stops
// printing (its output is gone) and its own result is success, which the
// failed output must turn into exit 1. (mutation review Q: E04)

import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import { createServer, connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { aigptBin, makeTempHome, seedOrderMemory, type TempHome, writeConfig } from './support.js';

describe('aigpt with a stdout connection the reader reset', () => {
  let home: TempHome;
  beforeEach(() => {
    home = makeTempHome();
  });
  afterEach(() => home.cleanup());

  it('read-memory exits 1 and names ECONNRESET', async () => {
    await writeConfig(home, { path: join(home.root, 'content') });
    const memoryDir = join(home.root, 'content', 'self', 'ai.syui.gpt.memory');
    await fs.mkdir(memoryDir, { recursive: true });
    // More records than one read batch: the scan reads files again after the
    // first failed write, so the error is seen while the command still runs.
    for (let i = 0; i < 80; i++) {
      await fs.writeFile(join(memoryDir, `note-${String(i).padStart(3, '0')}.json`), seedOrderMemory('self', 'x', `memory ${i}`));
    }
    const server = createServer({ pauseOnConnect: true });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const accepted = new Promise<Socket>((resolve) => server.once('connection', resolve));
      const address = server.address();
      if (address === null || typeof address === 'string') throw new Error('no TCP address');
      const client = connect(address.port, '127.0.0.1');
      await new Promise<void>((resolve, reject) => client.once('connect', resolve).once('error', reject));
      const peer = await accepted;
      const child = spawn(process.execPath, [aigptBin(), 'read-memory'], { env: home.childEnv, cwd: home.root, stdio: ['ignore', client, 'pipe'] });
      // Only the child holds the connection now; the peer resets it (RST),
      // so the child's next write fails with ECONNRESET.
      client.destroy();
      peer.resetAndDestroy();
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      const code = await new Promise<number | null>((resolve, reject) => {
        child.on('error', reject);
        child.on('close', resolve);
      });
      expect(stderr).toBe('aigpt: cannot write to stdout: ECONNRESET\n');
      expect(code).toBe(1);
    } finally {
      server.close();
    }
  }, 30_000);
});
