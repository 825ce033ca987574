// Which failures are usage errors (exit 2) and which runtime failures
// (exit 1), spec 4.7, at the edges the other CLI tests leave out.
// (mutation review K)

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../../src/aigpt/cli/program.js';
import { makeTempHome, runAigpt, type TempHome } from './support.js';

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
