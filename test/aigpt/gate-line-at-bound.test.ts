// A request line of exactly 4 MiB (the bound, spec 8) is within it and is
// served as any other. Read from a file, its first 4 MiB come as whole
// 64 KiB chunks without the newline: the server must wait for the rest of
// the line there, not take it for an oversized one (it then waited for an
// answer the transport never gives to a line it has not seen the end of,
// and the request was answered only after the 30 s answer wait).
// (mutation review Q: G05)

import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { closeSync, openSync, promises as fs } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { aigptBin, makeTempHome, type TempHome, writeConfig } from './support.js';

describe('aigpt server: a request line of exactly 4 MiB', () => {
  let home: TempHome;
  beforeEach(async () => {
    home = makeTempHome();
    await writeConfig(home, { path: join(home.root, 'content') });
  });
  afterEach(() => home.cleanup());

  it('is served at once', async () => {
    const head = '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"';
    const tail = '"}}';
    const line = `${head}${'a'.repeat(4 * 1024 * 1024 - head.length - tail.length)}${tail}`;
    expect(Buffer.byteLength(line)).toBe(4 * 1024 * 1024);
    const inputFile = join(home.root, 'input.jsonl');
    await fs.writeFile(inputFile, `${line}\n{"jsonrpc":"2.0","id":2,"method":"ping"}\n`);
    const input = openSync(inputFile, 'r');
    const started = Date.now();
    try {
      const child = spawn(process.execPath, [aigptBin(), 'server'], { env: home.childEnv, cwd: home.root, stdio: [input, 'pipe', 'pipe'] }) as ChildProcessWithoutNullStreams;
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      const code = await new Promise<number | null>((resolve, reject) => {
        child.on('error', reject);
        child.on('close', resolve);
      });
      expect(Date.now() - started).toBeLessThan(15_000);
      expect(code, stderr).toBe(0);
      expect(stdout).toBe('{"result":{},"jsonrpc":"2.0","id":1}\n{"result":{},"jsonrpc":"2.0","id":2}\n');
      expect(stderr).toBe('');
    } finally {
      closeSync(input);
    }
  }, 60_000);
});
