// Once an object's bytes are linked under its name the write has succeeded;
// failing to remove the spare temp name afterwards must not turn the stored
// object into a reported failure (the dead-writer sweep removes it later).
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';

// The removal goes through common/exclusive-link's removeQuietly (node:fs/promises).
vi.mock('node:fs/promises', async (original) => (await import('../../support/failing-rm.js')).withFailingRm(await original()));
const { failingRm: failing } = await import('../../support/failing-rm.js');

const { Repository } = await import('../../../src/aip/repository/repository.js');
const { ID, OBJECTS } = await import('../support/vectors.js');
const { tempDir } = await import('../support/temp.js');

describe('object write', () => {
  it('reports an object stored when only the removal of its spare temp file fails', async () => {
    const repo = await Repository.init(await tempDir());
    failing.under = join(repo.aipDir, 'tmp');
    try {
      const put = await repo.putObject(OBJECTS.V2);
      expect(put).toMatchObject({ ok: true });
      const stored = await readFile(join(repo.aipDir, 'objects', ID.V2.slice(0, 2), ID.V2.slice(2)));
      expect(createHash('sha256').update(stored).digest('hex')).toBe(ID.V2);
      expect((await readdir(join(repo.aipDir, 'tmp'))).length).toBe(1);
    } finally {
      failing.under = undefined;
    }
  });
});
