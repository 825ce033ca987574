import { describe, expect, it } from 'vitest';

import { describeCause } from '../../src/aigpt/core/errors.js';

/** A system error shaped as Node builds them: negative errno, code, syscall, and a message whose wording is Node's. */
function systemError(message: string, fields: { errno: number; code: string; syscall: string; path?: string }): NodeJS.ErrnoException {
  return Object.assign(new Error(message), fields);
}

describe("aigpt's one-line causes", () => {
  it("say a deleted working directory's ENOENT the same way whatever Node's wording", () => {
    // Node 20 and 22 write the first, Node 24 the second, for the same uv_cwd failure.
    const node20 = systemError('ENOENT: no such file or directory, uv_cwd', { errno: -2, code: 'ENOENT', syscall: 'uv_cwd' });
    const node24 = systemError(
      'ENOENT: process.cwd failed with error no such file or directory, the current working directory was likely removed without changing the working directory, uv_cwd',
      { errno: -2, code: 'ENOENT', syscall: 'uv_cwd' },
    );
    expect(describeCause(node20)).toBe('ENOENT: no such file or directory');
    expect(describeCause(node24)).toBe('ENOENT: no such file or directory');
  });

  it('leave out the path a file error would repeat', () => {
    const error = systemError("EACCES: permission denied, open '/p/x.json'", { errno: -13, code: 'EACCES', syscall: 'open', path: '/p/x.json' });
    expect(describeCause(error)).toBe('EACCES: permission denied');
  });

  it("keep a message whose code is not the errno's, or that is no system error", () => {
    expect(describeCause(systemError('odd: something, read', { errno: -2, code: 'EODD', syscall: 'read' }))).toBe('odd: something');
    expect(describeCause(new Error('plain failure'))).toBe('plain failure');
    expect(describeCause('text')).toBe('text');
  });
});
