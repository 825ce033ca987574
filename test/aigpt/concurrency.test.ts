// Two `aigpt server` processes saving 500 memories each into one folder at
// the same time: none is lost, no TID repeats, and each process's records
// keep their order (spec 3.6, 7.2, 7.3).

import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isValidTid, tidMicros } from '../../src/aigpt/core/tid.js';
import {
  INITIALIZE_REQUEST,
  INITIALIZED_NOTIFICATION,
  listDir,
  makeTempHome,
  snapshotMemories,
  startServerChild,
  type TempHome,
  writeConfig,
} from './support.js';

const PER_PROCESS = 500;

describe('concurrent writers', () => {
  let home: TempHome;
  beforeEach(async () => {
    home = makeTempHome();
    await writeConfig(home, { did: 'did:plc:xxx', handle: 'ai.syui.ai', path: join(home.root, 'content'), memory: 100 });
  });
  afterEach(() => home.cleanup());

  it(`two processes saving ${PER_PROCESS} memories each lose none and repeat no TID`, async () => {
    const servers = ['p', 'q'].map((prefix) => ({ prefix, server: startServerChild(home.childEnv) }));
    for (const { server } of servers) {
      server.send(INITIALIZE_REQUEST);
      await server.response(1);
      server.send(INITIALIZED_NOTIFICATION);
    }
    // Interleave the requests so both processes contend for the lock throughout.
    for (let i = 0; i < PER_PROCESS; i++) {
      for (const { prefix, server } of servers) {
        server.send({ jsonrpc: '2.0', id: 10 + i, method: 'tools/call', params: { name: 'save_memory', arguments: { content: `${prefix}-${i}` } } });
      }
    }
    for (const { server } of servers) {
      for (let i = 0; i < PER_PROCESS; i++) {
        const response = await server.response(10 + i);
        const result = response['result'] as { content: { text: string }[]; isError?: boolean };
        expect(result.isError, result.content[0]?.text).toBeUndefined();
        expect(result.content[0]?.text).toMatch(/^\{"count":\d+,"limit":100,"success":true\}$/);
      }
      server.child.stdin.end();
      expect((await server.exited).code).toBe(0);
    }

    const memoryDir = join(home.root, 'content', 'did:plc:xxx', 'ai.syui.gpt.memory');
    expect((await listDir(memoryDir)).filter((name) => name.startsWith('.'))).toEqual([]);
    const files = await snapshotMemories(memoryDir);
    expect(files).toHaveLength(2 * PER_PROCESS);
    const records = files.map(([name, text]) => {
      const record = JSON.parse(text) as { uri: string; value: { content: { text: string } } };
      return { tid: name.slice(0, -'.json'.length), uri: record.uri, text: record.value.content.text };
    });
    expect(records.every((r) => isValidTid(r.tid) && r.uri === `at://did:plc:xxx/ai.syui.gpt.memory/${r.tid}`)).toBe(true);
    // Distinct timestamps, not just distinct names: the folder floor orders both processes.
    expect(new Set(records.map((r) => tidMicros(r.tid))).size).toBe(2 * PER_PROCESS);
    const texts = records.map((r) => r.text);
    expect(new Set(texts).size).toBe(2 * PER_PROCESS);
    for (const prefix of ['p', 'q']) {
      // In TID order each process's saves appear in the order it made them.
      const mine = texts.filter((text) => text.startsWith(`${prefix}-`));
      expect(mine).toEqual(Array.from({ length: PER_PROCESS }, (_, i) => `${prefix}-${i}`));
    }
    // The last answer of the whole run saw every record.
    const counts = await Promise.all(servers.map(({ server }) => server.response(10 + PER_PROCESS - 1)));
    const lastCounts = counts.map((r) => JSON.parse((r['result'] as { content: { text: string }[] }).content[0]!.text).count as number);
    expect(Math.max(...lastCounts)).toBe(2 * PER_PROCESS);
  });
});
