// The admin runner's output rules in process: a completed command whose
// result does not fit the human format is reported as such (internal_error
// with a remediation), never as a crash or a plain failure.

import { describe, expect, it } from 'vitest';
import { runAdmin } from '../../../src/aipcs/cli/admin-commands.js';
import { renderOutcome } from '../../../src/aipcs/cli/output.js';

const invocation = (format: 'json' | 'human') => ({
  options: { format },
  resolveInput: { options: {}, env: {}, platform: 'linux' as const, sqliteVersion: null },
  stdinIsTty: false,
  stdoutIsTty: false,
  commandName: 'aipcs status',
});

const wide = { items: Array.from({ length: 101 }, (_, index) => ({ index: BigInt(index) })) };
const command = { check: () => ({ ok: true as const, value: null }), run: async () => wide };

describe('admin output', () => {
  it('prints a wide result as JSON', async () => {
    const outcome = await runAdmin(command, invocation('json'));
    expect(renderOutcome(outcome, { format: 'json', command: 'admin' }).exitCode).toBe(0);
  });

  it('explains a completed result that the human format cannot show', async () => {
    const outcome = await runAdmin(command, invocation('human'));
    const rendered = renderOutcome(outcome, { format: 'human', command: 'admin' });
    expect(rendered.exitCode).toBe(6);
    expect(rendered.stdout).toBe('');
    expect(rendered.stderr).toContain('error [internal_error]');
    expect(rendered.stderr).toContain('- --format: The command completed, but its result does not fit the human format.');
    expect(rendered.stderr).toContain('Repeat the same command with --format json');
  });
});
