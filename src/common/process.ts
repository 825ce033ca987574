// Process facts shared by the file locks of aigpt and aip.

import { readFileSync } from 'node:fs';

/** Whether a process with this id exists on this host (EPERM: it does, owned by someone else). */
export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException | null)?.code !== 'ESRCH';
  }
}

/**
 * Which process (not just which pid) runs as `pid` now: the kernel's boot id
 * and the process's start time in clock ticks since that boot
 * (`/proc/{pid}/stat` field 22), as `{boot id}/{ticks}`. A lock records its
 * holder's mark; a live process under the lock's pid with another mark is a
 * later process that reused the pid (after a kill -9 and a container
 * restart, or a reboot), so the holder is gone. No clock is involved.
 * Undefined where /proc cannot tell (not Linux, the process is gone, or
 * /proc is not mounted): callers then fall back to the pid alone.
 */
export function processStartMark(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    // Field 2 (the command name) is in parentheses and may hold spaces or ')'.
    const ticks = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'latin1').trim();
    return ticks !== undefined && /^[0-9]+$/.test(ticks) && /^[0-9a-f-]{36}$/.test(boot) ? `${boot}/${ticks}` : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether a lock naming `pid` with the start mark `mark` (undefined when the
 * lock has none) still has its holder: the pid exists and, when both the lock
 * and /proc give a mark, it is the same process.
 */
export function lockHolderAlive(pid: number, mark: string | undefined, exists: (pid: number) => boolean = processExists): boolean {
  if (!exists(pid)) return false;
  if (mark === undefined) return true;
  const now = processStartMark(pid);
  return now === undefined || now === mark;
}
