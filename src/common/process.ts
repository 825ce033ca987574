// Process facts shared by the file locks of aigpt and aip.

/** Whether a process with this id exists on this host (EPERM: it does, owned by someone else). */
export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException | null)?.code !== 'ESRCH';
  }
}
