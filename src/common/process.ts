// Process facts shared by the file locks of aigpt and aip.

import { readFileSync, readlinkSync } from 'node:fs';

/**
 * Whether a process with this id is alive on this host (EPERM: it is, owned
 * by someone else). A zombie (`Z`, `X` in /proc: killed, not yet reaped by
 * its parent) is not: it holds no lock and writes nothing, yet `kill(pid, 0)`
 * finds it until its parent calls wait, which may be never.
 */
export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException | null)?.code !== 'ESRCH';
  }
  return !isZombie(pid);
}

function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    const state = stat.charAt(stat.lastIndexOf(')') + 2);
    return state === 'Z' || state === 'X';
  } catch {
    return false; // no /proc here, or gone meanwhile (the next check sees it)
  }
}

let ownNamespace: { readonly value: string | undefined } | undefined;

/**
 * This process's PID namespace (`pid:[4026531836]`), or undefined where
 * /proc cannot tell. Pids compare only within one namespace: containers that
 * share a host name (docker's host network, the containers of one Kubernetes
 * pod, `unshare -p`) each have their own pid 1, so a lock recorded in another
 * namespace is judged like one from another host, never by its pid.
 */
export function ownPidNamespace(): string | undefined {
  if (ownNamespace === undefined) {
    let value: string | undefined;
    try {
      value = readlinkSync('/proc/self/ns/pid');
    } catch {
      value = undefined;
    }
    ownNamespace = { value };
  }
  return ownNamespace.value;
}

/** Whether a lock's recorded PID namespace (undefined: it recorded none) lets its pid be judged here. */
export function inOwnPidNamespace(recorded: string | undefined): boolean {
  return recorded === undefined || recorded === ownPidNamespace();
}

/** The inode number of this process's PID namespace (`4026531836`), or undefined where /proc cannot tell. */
function ownPidNamespaceNumber(): string | undefined {
  return /^pid:\[([0-9]+)\]$/.exec(ownPidNamespace() ?? '')?.[1];
}

/**
 * The owner part of a temp file's or folder's name: `{pid}.{PID namespace
 * inode}` (`{pid}` where /proc tells no namespace). A sweep of the
 * leftovers of killed writers reads it back with OWNER_TAG_PATTERN and
 * asks ownerTagGone, so that a live writer in another PID namespace sharing
 * the folder (a container) is never judged by a pid that names another
 * process here.
 */
export function ownerTag(): string {
  const namespace = ownPidNamespaceNumber();
  return namespace === undefined ? String(process.pid) : `${process.pid}.${namespace}`;
}

/** Regular-expression source of an ownerTag: group 1 the pid, group 2 the namespace (absent in older names). */
export const OWNER_TAG_PATTERN = '([0-9]+)(?:\\.([0-9]+))?';

/**
 * Whether the writer named by an ownerTag's parts is gone from this host: a
 * tag of another PID namespace is never judged (its pid names another
 * process here); one without a namespace (older names) is judged by its pid.
 */
export function ownerTagGone(pid: string, namespace: string | undefined): boolean {
  if (namespace !== undefined && namespace !== ownPidNamespaceNumber()) return false;
  return !processExists(Number(pid));
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
