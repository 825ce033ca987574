// read_memory names unreadable memory files one by one (spec 3.2, 5.5), but
// only up to MAX_LISTED_UNREADABLE: each entry carries its path twice, a path
// may be 4 KiB and 10 000 files are read, so a folder of empty files (what a
// crash mid-save leaves) made answers of megabytes, past what an MCP client
// takes on one line. The others are one entry naming the folder with their count.

import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_LISTED_UNREADABLE } from '../../src/aigpt/core/limits.js';
import { INITIALIZE_REQUEST, INITIALIZED_NOTIFICATION, makeTempHome, runAigpt, startServerChild, type TempHome, writeConfig } from './support.js';

describe('read_memory lists unreadable files up to a bound', () => {
  let home: TempHome;

  beforeEach(() => {
    home = makeTempHome();
  });

  afterEach(() => {
    home.cleanup();
  });

  it('names the first 100 unreadable files and counts the rest in one entry', async () => {
    const base = join(home.root, 'data');
    await writeConfig(home, { path: base });
    expect((await runAigpt(['save-memory', 'kept'], home.childEnv)).code).toBe(0);
    const folder = join(base, 'self', 'ai.syui.gpt.memory');
    const extra = 30;
    for (let i = 0; i < MAX_LISTED_UNREADABLE + extra; i++) await fs.writeFile(join(folder, `2${String(i).padStart(12, '0')}.json`), '');

    const server = startServerChild(home.childEnv);
    try {
      server.send(INITIALIZE_REQUEST);
      await server.response(1);
      server.send(INITIALIZED_NOTIFICATION);
      server.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'read_memory', arguments: {} } });
      const result = (await server.response(2))['result'] as { content: { text: string }[] };
      const payload = JSON.parse(result.content[0]!.text) as { count: number; skipped: { path: string; reason: string }[] };
      expect(payload.count).toBe(1);
      expect(payload.skipped).toHaveLength(MAX_LISTED_UNREADABLE + 1);
      expect(payload.skipped[0]!.path).toBe(join(folder, '2000000000000.json'));
      expect(payload.skipped.at(-1)).toEqual({
        path: folder,
        reason: `${extra} more unreadable memory file(s) not listed (${MAX_LISTED_UNREADABLE} are); aigpt read-memory lists them all`,
      });
    } finally {
      server.child.stdin.end();
      await server.exited;
    }
  });
});
