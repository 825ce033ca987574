// Outputs of the built CLI the other tests leave out (mutation review K):
// setup passes claude's two output streams on, each to its own, and a
// stdout that fails for another reason than a closed pipe is a runtime
// failure (exit 1, named on stderr), not a success.

import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, openSync, promises as fs } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { aigptBin, makeTempHome, runAigpt, type TempHome } from './support.js';

describe('aigpt output spelling and stdout failures', () => {
  let home: TempHome;
  beforeEach(() => {
    home = makeTempHome();
  });
  afterEach(() => home.cleanup());

  it("setup forwards claude's stderr to its stderr and claude's stdout to its stdout", async () => {
    const bin = join(home.root, 'bin');
    await fs.mkdir(bin);
    await fs.writeFile(join(bin, 'claude'), '#!/bin/sh\necho "claude says out"\necho "claude says err" >&2\nexit 0\n', { mode: 0o755 });
    const result = await runAigpt(['setup'], { ...home.childEnv, PATH: bin });
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('claude says err\n');
    expect(result.stdout).toContain('\nok data initialized\nclaude says out\nok claude mcp add aigpt\n\ndone.\n');
  });

  it.skipIf(!existsSync('/dev/full'))('a stdout that cannot be written (ENOSPC) ends the command with exit 1 and says so', async () => {
    expect((await runAigpt([], home.childEnv)).code).toBe(0);
    const full = openSync('/dev/full', 'w');
    try {
      const result = spawnSync(process.execPath, [aigptBin(), 'read-core'], { env: home.childEnv, encoding: 'utf8', stdio: ['ignore', full, 'pipe'] });
      expect(result.status).toBe(1);
      expect(result.stderr).toBe('aigpt: cannot write to stdout: ENOSPC\n');
    } finally {
      closeSync(full);
    }
  });
});
