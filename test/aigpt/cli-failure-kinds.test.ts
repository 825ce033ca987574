// Which failures are usage errors (exit 2) and which runtime failures
// (exit 1), spec 4.7, at the edges the other CLI tests leave out.
// (mutation review K)

import { spawnSync } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../../src/aigpt/cli/program.js';
import { aigptBin, makeTempHome, runAigpt, type TempHome } from './support.js';

describe('aigpt failure kinds', () => {
  let home: TempHome;
  beforeEach(() => {
    home = makeTempHome();
  });
  afterEach(() => home.cleanup());

  it('an unexpected error (no AigptError) is a runtime failure, exit 1 on stderr, never a usage error', async () => {
    let stderr = '';
    const code = await runCli(['read-core'], {
      environment: home.environment,
      io: {
        stdout: () => {
          throw new Error('the output broke');
        },
        stderr: (text) => (stderr += text),
      },
    });
    expect(code).toBe(1);
    expect(stderr).toBe('aigpt: unexpected error: the output broke\n');
  });

  it('`aigpt server` whose stdin cannot be read (a folder) is a runtime failure, not a session the client ended (mutation review AM)', () => {
    const folder = openSync(home.root, 'r');
    try {
      const result = spawnSync(process.execPath, [aigptBin(), 'server'], { env: home.childEnv, cwd: home.root, encoding: 'utf8', stdio: [folder, 'pipe', 'pipe'] });
      expect(result.status).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr).toBe('aigpt: cannot read stdin: EISDIR\n');
    } finally {
      closeSync(folder);
    }
  });

  it('`help` with an unknown command and a second word names the unknown command (exit 2)', async () => {
    const result = await runAigpt(['help', 'nope', 'extra'], home.childEnv);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain("unknown command 'nope'");
    expect(result.stderr).not.toContain('extra');
  });

  it('`help -` names `-` as an unknown command in one short hint, not the whole help (exit 2)', async () => {
    for (const args of [['help', '-'], ['help', '--', '-']]) {
      const result = await runAigpt(args, home.childEnv);
      expect(result.code).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toBe("error: unknown command '-'\n(run aigpt --help for usage)\n");
    }
  });
});
