// Several `aipcs serve` processes started at once on a fresh data root all
// come up: creating the root, the registry file and the WAL switch race
// safely (the first to act wins, the others check what it made).

import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { aipcsBin } from '../../support/bins.js';
import { freshDataRoot, sqliteArgs } from '../../support/aipcs-client.js';

const INIT = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n';

function serve(dataRoot: string): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [aipcsBin(), 'serve', ...sqliteArgs(dataRoot)], { stdio: ['pipe', 'pipe', 'ignore'] });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stdin.end(INIT);
    child.on('exit', (code) => resolve({ code, stdout }));
  });
}

describe('concurrent sqlite start-up', () => {
  it('brings up every server on a fresh root', async () => {
    for (let round = 0; round < 5; round++) {
      const dataRoot = freshDataRoot();
      const results = await Promise.all([0, 1, 2, 3].map(() => serve(dataRoot)));
      for (const result of results) {
        expect(result.code).toBe(0);
        expect(result.stdout).toContain('"serverInfo"');
      }
    }
  });
});
