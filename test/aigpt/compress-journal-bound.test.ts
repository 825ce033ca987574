// A compress names every old record in its journal, and recovery reads the
// journal back within MAX_JOURNAL_BYTES (64 MiB). A folder whose names do not
// fit must be refused before anything is written: a committed journal that
// recovery cannot read stops every later write, `aigpt server` included.

import { closeSync, openSync, promises as fs } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_JOURNAL_BYTES } from '../../src/aigpt/core/limits.js';
import { MemoryStore } from '../../src/aigpt/storage/memory-store.js';
import { recordTree } from '../../src/aigpt/core/record-paths.js';
import { makeTempHome, type TempHome } from './support.js';

describe('compress and the journal bound', () => {
  let home: TempHome;
  let store: MemoryStore;
  beforeEach(async () => {
    home = makeTempHome();
    store = new MemoryStore({ did: 'did:plc:xxx', handle: 'ai.syui.ai', tree: recordTree(join(home.root, 'content'), 'did:plc:xxx'), memoryLimit: 100n });
    await store.ensureLayout();
  });
  afterEach(() => home.cleanup());

  it('refuses, changing nothing, a compress whose journal would be larger than recovery reads back', async () => {
    const dir = store.tree.memoryDir;
    // 255-byte names of control characters, each written as a six-byte
    // escape in the journal: about 1 483 journal bytes per file.
    const fill = '\u0001'.repeat(245);
    const count = Math.ceil(MAX_JOURNAL_BYTES / 1483) + 10;
    for (let i = 0; i < count; i++) closeSync(openSync(join(dir, `${String(i).padStart(5, '0')}${fill}.json`), 'w'));
    const before = (await fs.readdir(dir)).length;

    await expect(store.compress(['kept'])).rejects.toThrow(
      new RegExp(`^Failed to write ${join(dir, '.compress-journal')}: the names of the ${count} memory files to replace need \\d+ bytes of journal, more than the ${MAX_JOURNAL_BYTES} a recovery reads back; nothing was changed`),
    );
    const after = await fs.readdir(dir);
    expect(after.length).toBe(before);
    expect(after.filter((name) => name.startsWith('.'))).toEqual([]);
  });
});
