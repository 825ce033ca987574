// docs/aigpt.md (setup, step 3): `claude`'s output is passed through; it
// gets no input. A claude that reads its stdin must not see what was typed
// (or piped) to `aigpt setup`, nor wait on a terminal. (mutation review Q: S27)

import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeTempHome, runAigpt, type TempHome } from './support.js';

describe('aigpt setup runs claude without input', () => {
  let home: TempHome;
  beforeEach(() => {
    home = makeTempHome();
  });
  afterEach(() => home.cleanup());

  it("claude reads an empty stdin, not setup's", async () => {
    const bin = join(home.root, 'bin');
    await fs.mkdir(bin);
    await fs.writeFile(join(bin, 'claude'), '#!/bin/sh\nprintf "claude read [%s]\\n" "$(cat)"\nexit 0\n', { mode: 0o755 });
    const result = await runAigpt(['setup'], { ...home.childEnv, PATH: `${bin}:/usr/bin:/bin` }, { input: 'typed by the user\n' });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('\nok data initialized\nclaude read []\nok claude mcp add aigpt\n');
  });
});
