// Ops spec §1.9.1: `import --dry-run` must not carry --operation-id or --yes
// (in any mode), and a real import needs both in machine mode. The help
// said --operation-id was "required in machine mode" with no word of the
// dry run, which refuses it; the help now says so, and the command does it.

import { describe, expect, it } from 'vitest';
import { aipcs } from '../../support/aipcs-admin.js';

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
