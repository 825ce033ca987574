// docs/aigpt.md (status): files not read because of the 10 000-file bound
// are not counted as unreadable. The status only counts the files beyond
// the bound: an unreadable one among them (the oldest) gives no warning,
// while read-memory, the full dump, reads it and names it.
// (mutation review Q: P50)

import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeTempHome, runAigpt, type TempHome, writeNumberedMemories } from './support.js';

describe('aigpt status and the 10 000-file read bound', () => {
  let home: TempHome;
  beforeEach(() => {
    home = makeTempHome();
  });
  afterEach(() => home.cleanup());

  it('does not call an unreadable file beyond the bound unreadable', async () => {
    const { memoryDir, names } = await writeNumberedMemories(home, 10_001);
    // The oldest by the selection order: beyond the bound.
    await fs.writeFile(join(memoryDir, names[0]!), 'not json');
    const status = await runAigpt([], home.childEnv);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout.endsWith('\nrecords: 10001/100\n')).toBe(true);
    const dump = await runAigpt(['read-memory'], home.childEnv);
    expect(dump.stderr).toContain(names[0]);
  }, 60_000);
});
