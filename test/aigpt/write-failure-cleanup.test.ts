// A write the file system refuses (a full disk: ENOSPC; here the same
// failure made with a file size limit: EFBIG) fails the save or compress,
// changes no memory, and leaves no temp or staged file behind: the space it
// took is given back at once, not at the next write's recovery.

import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  aigptBin,
  INITIALIZE_REQUEST,
  INITIALIZED_NOTIFICATION,
  listDir,
  makeTempHome,
  runAigpt,
  runToEnd,
  snapshotMemories,
  startServerChild,
  type TempHome,
  writeConfig,
} from './support.js';
import { nodeCommand } from '../support/resource-limits.js';

/** 8 blocks: 4 KiB for dash's 512-byte blocks, 8 KiB for 1024-byte ones; a 15 000-byte memory does not fit, a short one does. */
const LIMIT_BLOCKS = 8;
const TOO_LARGE = 'x'.repeat(15_000);

describe('aigpt after a refused write', () => {
  let home: TempHome;
  let memoryDir: string;

  beforeEach(async () => {
    home = makeTempHome();
    await writeConfig(home, { did: 'did:plc:xxx', handle: 'ai.syui.ai', path: join(home.root, 'content'), memory: 100 });
    memoryDir = join(home.root, 'content', 'did:plc:xxx', 'ai.syui.gpt.memory');
    for (const text of ['kept 0', 'kept 1']) expect((await runAigpt(['save-memory', text], home.childEnv)).code).toBe(0);
  });

  afterEach(() => home.cleanup());

  it('save-memory fails with the cause and leaves the folder as it was', async () => {
    const before = await snapshotMemories(memoryDir);
    const [command, args] = nodeCommand([aigptBin(), 'save-memory', TOO_LARGE], { fileSizeBlocks: LIMIT_BLOCKS });
    const run = await runToEnd(command, args, { env: home.childEnv, cwd: tmpdir() });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^aigpt: Failed to write .*\.json: EFBIG: file too large\n$/);
    expect(await listDir(memoryDir)).toEqual(before.map(([name]) => name));
    expect(await snapshotMemories(memoryDir)).toEqual(before);
    // Nothing was left for the next write to clean up.
    const next = await runAigpt(['save-memory', 'after'], home.childEnv);
    expect(next.code).toBe(0);
    expect(next.stderr).toBe('');
  });

  it('compress fails with the cause, keeps every old memory and removes what it staged', async () => {
    const before = await snapshotMemories(memoryDir);
    const server = startServerChild(home.childEnv, { fileSizeLimitBlocks: LIMIT_BLOCKS });
    try {
      server.send(INITIALIZE_REQUEST);
      await server.response(1);
      server.send(INITIALIZED_NOTIFICATION);
      // The small items fit; the large one fails while its batch is staged.
      const items = ['new 0', 'new 1', TOO_LARGE, 'new 3'];
      server.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'compress', arguments: { items } } });
      const response = (await server.response(2))['result'] as { isError?: boolean; content: { text: string }[] };
      expect(response.isError).toBe(true);
      expect(JSON.parse(response.content[0]!.text)).toEqual({ error: expect.stringMatching(/^Failed to write .*\.json: EFBIG: file too large$/) as unknown });
      expect(await listDir(memoryDir)).toEqual(before.map(([name]) => name));
      expect(await snapshotMemories(memoryDir)).toEqual(before);
    } finally {
      server.child.stdin.end();
      await server.exited;
    }
    const next = await runAigpt(['save-memory', 'after'], home.childEnv);
    expect(next.code).toBe(0);
    expect(next.stderr).toBe('');
  });
});
