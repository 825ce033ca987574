// Ops spec §1.9.1: `import --dry-run` must not carry --operation-id or --yes
// (in any mode), and a real import needs both in machine mode. The help
// said --operation-id was "required in machine mode" with no word of the
// dry run, which refuses it; the help now says so, and the command does it.

import { describe, expect, it } from 'vitest';
import { aipcs, freshDataRoot, rootArgs } from '../../support/aipcs-admin.js';

const OP = '00000000-0000-4000-8000-000000000001';

describe('aipcs import --help and the dry run', () => {
  it('says that --operation-id and --yes are never taken with --dry-run, as the command enforces', () => {
    const help = aipcs(['import', '--help']);
    expect(help.status).toBe(0);
    const line = (option: string): string => help.stdout.split('\n').find((text) => text.startsWith(`  ${option}`)) ?? '';
    expect(line('--operation-id <OPERATION_ID>')).toMatch(/required in machine mode; never with --dry-run\)$/);
    expect(line('--yes')).toMatch(/never with --dry-run/);
    for (const extra of [['--operation-id', OP], ['--yes']]) {
      const run = aipcs(['import', '--input', '/nonexistent/h10.jsonl', '--dry-run', ...extra]);
      expect(run.status, run.stdout).toBe(2);
      expect(run.envelope.error).toMatchObject({ code: 'validation_failed' });
    }
  });
});

describe('aipcs import of an --input file that cannot be opened', () => {
  // Ops spec §1.9.5 and §9.10: storage_unavailable (6), the path never printed.
  // "Storage is unavailable." alone sent the operator to the database for a
  // mistyped file name; the issue names the flag and what to check.
  it('is storage_unavailable with an issue naming --input, in JSON and in human form', () => {
    const missing = '/nonexistent/typo-h10.jsonl';
    const args = ['import', '--input', missing, '--dry-run', ...rootArgs(freshDataRoot())];
    const json = aipcs(args);
    expect(json.status).toBe(6);
    expect(json.envelope.error).toEqual({
      code: 'storage_unavailable',
      message: 'Storage is unavailable.',
      issues: [
        {
          code: 'input_unavailable',
          path: '--input',
          message: 'The input file cannot be opened or read: it is missing, not readable, or its file system failed.',
          remediation: 'Check that --input names an existing, readable file written by aipcs export.',
        },
      ],
      retryable: false,
    });
    const human = aipcs([...args, '--format', 'human']);
    expect(human.status).toBe(6);
    expect(human.stderr).toBe(
      'error [storage_unavailable]: Storage is unavailable.\n' +
        '- --input: The input file cannot be opened or read: it is missing, not readable, or its file system failed.\n' +
        '  Check that --input names an existing, readable file written by aipcs export.\n',
    );
    expect(`${json.stderr}${human.stderr}`).not.toContain('typo-h10');
  });
});
