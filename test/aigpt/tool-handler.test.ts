// The tool handler called directly, as a caller other than the tool server
// would: the server's schema check never runs, so the handler's own argument
// checks are what keep a mistyped call from writing (spec 5.4), and a name the
// catalogue lacks is still an unknown tool. (mutation review AM)

import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AigptError } from '../../src/aigpt/core/errors.js';
import { recordTree } from '../../src/aigpt/core/record-paths.js';
import { AigptToolHandler } from '../../src/aigpt/mcp/tools.js';
import { MemoryStore } from '../../src/aigpt/storage/memory-store.js';
import { makeTempHome, snapshotMemories, type TempHome } from './support.js';

describe('AigptToolHandler called directly', () => {
  let home: TempHome;
  let store: MemoryStore;
  let handler: AigptToolHandler;

  beforeEach(async () => {
    home = makeTempHome();
    store = new MemoryStore({ did: 'did:plc:xxx', handle: 'ai.syui.ai', tree: recordTree(join(home.root, 'content'), 'did:plc:xxx'), memoryLimit: 3n });
    await store.ensureLayout();
    await store.saveMemory('kept');
    handler = new AigptToolHandler(() => Promise.resolve(store));
  });

  afterEach(() => home.cleanup());

  it('rejects a mistyped content or items itself and writes nothing', async () => {
    const before = await snapshotMemories(store.tree.memoryDir);
    for (const content of [undefined, 5, null, ['x']]) {
      expect(await handler.call('save_memory', content === undefined ? {} : { content })).toEqual({
        content: [{ type: 'text', text: '{"error":"content must be a string"}' }],
        isError: true,
      });
    }
    for (const items of [undefined, 'x', ['ok', 1], [1, 'ok'], [['nested']]]) {
      expect(await handler.call('compress', items === undefined ? {} : { items })).toEqual({
        content: [{ type: 'text', text: '{"error":"items must be an array of strings"}' }],
        isError: true,
      });
    }
    expect(await snapshotMemories(store.tree.memoryDir)).toEqual(before);
  });

  it('answers a name outside the catalogue as an unknown tool', async () => {
    expect(await handler.call('nope', {})).toEqual({ content: [{ type: 'text', text: '{"error":"Unknown tool: nope"}' }], isError: true });
  });

  it('answers a store that cannot be opened with its message, and lets other failures through', async () => {
    const failing = new AigptToolHandler(() => Promise.reject(new AigptError('config_invalid', 'invalid config /x: broken')));
    expect(await failing.call('read_core', {})).toEqual({ content: [{ type: 'text', text: '{"error":"invalid config /x: broken"}' }], isError: true });
    const crashing = new AigptToolHandler(() => Promise.reject(new TypeError('bug')));
    await expect(crashing.call('read_core', {})).rejects.toThrow('bug');
  });
});
