// The lexical rules of the administration flags (§1.5) and the mode decision
// (§1.9.1) at their bounds, in process: the CLI tests reach them only through
// a few values each, and argv can carry neither a NUL nor an undefined flag.

import { describe, expect, it } from 'vitest';
import { purgeCommand } from '../../../src/aipcs/cli/admin-commands.js';
import { checkFilePath, checkLimit, checkOptionalUuid, checkRevision, isInteractive, missingFlag, type Checked } from '../../../src/aipcs/cli/admin-flags.js';

function value<T>(checked: Checked<T>): T {
  if (!checked.ok) throw new Error(`refused: ${checked.error.issues[0]?.path}`);
  return checked.value;
}

function refusedAt<T>(checked: Checked<T>): string | undefined {
  return checked.ok ? undefined : `${checked.error.code} ${checked.error.issues[0]?.path}`;
}

describe('admin flag lexical rules (§1.5)', () => {
  it('--limit defaults to 100 and admits 1 to 100', () => {
    expect(value(checkLimit(undefined))).toBe(100);
    expect([value(checkLimit('1')), value(checkLimit('100'))]).toEqual([1, 100]);
    expect(refusedAt(checkLimit('101'))).toBe('validation_failed --limit');
  });

  it('--expected-revision is absent or at most 2^63-1', () => {
    expect(value(checkRevision(undefined))).toBeNull();
    expect(value(checkRevision('9223372036854775807'))).toBe(9223372036854775807n);
    expect(refusedAt(checkRevision('9223372036854775808'))).toBe('validation_failed --expected-revision');
  });

  it('an empty identifier is refused, never taken for an absent one', () => {
    expect(value(checkOptionalUuid(undefined, '--operation-id'))).toBeNull();
    expect(refusedAt(checkOptionalUuid('', '--operation-id'))).toBe('validation_failed --operation-id');
  });

  it('a path is at most 4096 characters, counted as code points', () => {
    expect(value(checkFilePath('a'.repeat(4096), '--output'))).toBe('a'.repeat(4096));
    expect(refusedAt(checkFilePath('a'.repeat(4097), '--output'))).toBe('validation_failed --output');
    // 4096 astral characters are 8192 UTF-16 units and still admitted.
    expect(value(checkFilePath('\u{1F600}'.repeat(4096), '--input'))).toBe('\u{1F600}'.repeat(4096));
    expect(refusedAt(checkFilePath('\u{1F600}'.repeat(4097), '--input'))).toBe('validation_failed --input');
  });

  it('a path holds no NUL and ends in a name other than ..', () => {
    for (const bad of ['', 'a\u0000b', '/', '.', './', '..', 'dir/..', 'dir/../', '/..']) {
      expect(refusedAt(checkFilePath(bad, '--output')), JSON.stringify(bad)).toBe('validation_failed --output');
    }
  });

  it('drops empty and . components but keeps a leading / and inner ..', () => {
    expect(value(checkFilePath('./out.jsonl/.', '--output'))).toBe('out.jsonl');
    expect(value(checkFilePath('/tmp//x/./out.jsonl/', '--output'))).toBe('/tmp/x/out.jsonl');
    expect(value(checkFilePath('a/../b', '--input'))).toBe('a/../b');
  });

  it('a missing machine-mode option names the flag with a remediation', () => {
    const document = missingFlag('--yes');
    expect([document.code, document.retryable, document.issues[0]?.path]).toEqual(['validation_failed', false, '--yes']);
    expect(document.issues[0]?.remediation).toContain('--format human');
  });
});

describe('machine vs interactive mode (§1.9.1)', () => {
  const terminal = { format: 'human', stdinIsTty: true, stdoutIsTty: true, yes: false } as const;

  it('is interactive only with --format human, both terminals and no --yes', () => {
    expect(isInteractive(terminal)).toBe(true);
    expect(isInteractive({ ...terminal, format: 'json' })).toBe(false);
    expect(isInteractive({ ...terminal, stdinIsTty: false })).toBe(false);
    expect(isInteractive({ ...terminal, stdoutIsTty: false })).toBe(false);
    expect(isInteractive({ ...terminal, yes: true })).toBe(false);
  });
});

describe('purge authority in process', () => {
  // The parser refuses a purge with neither flag first (operations-walk.test.ts); the check still must not pass one without.
  const id = '00000000-0000-4000-8000-000000000001';
  const invocation = (options: Record<string, unknown>) => ({
    options: { expectedRevision: '2', operationId: '00000000-0000-4000-8000-000000000002', yes: true, confirmServiceId: id, ...options },
    serviceId: id,
    resolveInput: { options: {}, env: {}, platform: 'linux' as const, sqliteVersion: null },
    stdinIsTty: false,
    stdoutIsTty: false,
    commandName: 'aipcs service purge',
  });

  it.each([false, true])('needs --receipt or --override (interactive: %s)', (interactive) => {
    expect(refusedAt(purgeCommand.check(invocation({}), interactive))).toBe('validation_failed --receipt');
    expect(purgeCommand.check(invocation({ override: true }), interactive).ok).toBe(true);
  });
});
