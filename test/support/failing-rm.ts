// `rm` from node:fs/promises that fails with EACCES for paths under a chosen
// prefix, for vi.mock: root ignores file permissions, so a failing removal
// cannot be made with real files here. Usage:
//   vi.mock('node:fs/promises', async (original) => (await import('./failing-rm.js')).withFailingRm(await original()));
// then set `failingRm.under` around the call under test.

type FsPromises = typeof import('node:fs/promises');

/** Paths starting with `under` fail to be removed; undefined removes as usual. */
export const failingRm: { under: string | undefined } = { under: undefined };

export function withFailingRm(actual: FsPromises): FsPromises {
  const rm: FsPromises['rm'] = async (path, options) => {
    if (failingRm.under !== undefined && String(path).startsWith(failingRm.under)) {
      throw Object.assign(new Error(`EACCES: permission denied, rm '${String(path)}'`), { code: 'EACCES' });
    }
    return actual.rm(path, options);
  };
  return { ...actual, rm, default: { ...actual, rm } } as FsPromises;
}
