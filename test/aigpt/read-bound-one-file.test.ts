// The edge of the read bound (spec 8): one memory file beyond it is still
// reported, by read_memory as a skipped entry naming the folder and by the
// instructions in their count of omitted memories. The folder entry comes
// before the unreadable files read. The instructions read under the same
// bound, so an unreadable file beyond it is omitted, not counted unreadable
// (as the status does). (mutation review AM)

import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_READ_MEMORY_BYTES } from '../../src/aigpt/core/limits.js';
import { memoryRecordJson } from '../../src/aigpt/core/record-format.js';
import { INITIALIZE_REQUEST, INITIALIZED_NOTIFICATION, makeTempHome, startServerChild, type TempHome, writeConfig } from './support.js';

describe('exactly one memory file beyond the read bound', () => {
  let home: TempHome;
  let memoryDir: string;
  const text = (i: number): string => `${i} ${'x'.repeat(1_000_000)}`;

  beforeEach(async () => {
    home = makeTempHome();
    const base = join(home.root, 'content');
    await writeConfig(home, { path: base });
    memoryDir = join(base, 'self', 'ai.syui.gpt.memory');
    await fs.mkdir(memoryDir, { recursive: true });
    // Seven records of about 1 MB: six fit the 6 MiB bound, the oldest does not.
    for (let i = 0; i < 7; i++) {
      const tid = `3mfyouuy6222${'abcdefg'[i]!}`;
      await fs.writeFile(join(memoryDir, `${tid}.json`), memoryRecordJson({ did: 'self', tid, text: text(i), createdAt: '2026-01-01T00:00:00Z' }));
    }
    expect(7 * 1_000_000).toBeGreaterThan(MAX_READ_MEMORY_BYTES);
    expect(6 * 1_001_000).toBeLessThan(MAX_READ_MEMORY_BYTES);
  });

  afterEach(() => home.cleanup());

  interface Answers {
    instructions: string;
    payload: { count: number; records: { value: { content: { text: string } } }[]; skipped: unknown };
  }

  /** One server child: the instructions at initialize, then read_memory's payload. */
  async function initializeAndReadMemory(): Promise<Answers> {
    const server = startServerChild(home.childEnv);
    try {
      server.send(INITIALIZE_REQUEST);
      const initialized = (await server.response(1))['result'] as { instructions: string };
      server.send(INITIALIZED_NOTIFICATION);
      server.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'read_memory', arguments: {} } });
      const result = (await server.response(2))['result'] as { content: { text: string }[] };
      return { instructions: initialized.instructions, payload: JSON.parse(result.content[0]!.text) as Answers['payload'] };
    } finally {
      server.child.stdin.end();
      await server.exited;
    }
  }

  it('is one skipped entry in read_memory, before the unreadable file read, and one omitted memory in the instructions', async () => {
    // The newest file is empty: unreadable, it costs nothing against the bound.
    await fs.writeFile(join(memoryDir, '3mfyouuy6222h.json'), '');
    const { instructions, payload } = await initializeAndReadMemory();
    // Every memory is larger than the instructions bound: the six read are omitted for size, the seventh was never read;
    // the empty file is counted and skipped.
    expect(instructions).toBe('[aigpt] memory records: 8/100 1 unreadable memory file(s) were skipped. (7 oldest memories omitted for size; use read_memory)');
    expect(payload.count).toBe(6);
    expect(payload.records.map((record) => record.value.content.text)).toEqual([1, 2, 3, 4, 5, 6].map(text));
    expect(payload.skipped).toEqual([
      { path: memoryDir, reason: `1 oldest memory file(s) not read: beyond the read bound (10000 files, ${MAX_READ_MEMORY_BYTES} bytes, newest first)` },
      { path: join(memoryDir, '3mfyouuy6222h.json'), reason: 'Failed to parse: The JSON document is malformed.' },
    ]);
  });

  it('leaves an unreadable file older than the bound unread: the instructions count it as omitted, not as unreadable', async () => {
    await fs.writeFile(join(memoryDir, '3mfyouuy62227.json'), '');
    const { instructions, payload } = await initializeAndReadMemory();
    expect(instructions).toBe('[aigpt] memory records: 8/100 (8 oldest memories omitted for size; use read_memory)');
    expect(payload.count).toBe(6);
    expect(payload.skipped).toEqual([
      { path: memoryDir, reason: `2 oldest memory file(s) not read: beyond the read bound (10000 files, ${MAX_READ_MEMORY_BYTES} bytes, newest first)` },
    ]);
  });
});
