// Asynchronous tasks kept in flight up to a bound: file writes whose system
// calls (fsyncs above all) wait in the thread pool, one after another when
// awaited in turn.

/** Starts a task once fewer than the bound run; rejects with the first failure of an earlier task instead. */
export type StartTask = (task: () => Promise<void>) => Promise<void>;

/** Waits until every task started so far has ended; rejects with the first failure, if any. */
export type DrainTasks = () => Promise<void>;

/**
 * Runs `body`, which starts tasks through `start`, at most `limit` at a time.
 * Once a task has failed no further task starts (`start` throws its error).
 * Every started task has ended when this returns or throws; the error thrown
 * is the first task failure, or else the body's own.
 */
export async function withBoundedTasks<T>(limit: number, body: (start: StartTask, drain: DrainTasks) => Promise<T>): Promise<T> {
  const running = new Set<Promise<void>>();
  let failed: { readonly error: unknown } | undefined;
  const start: StartTask = async (task) => {
    while (failed === undefined && running.size >= limit) await Promise.race(running);
    if (failed !== undefined) throw failed.error;
    const run = task()
      .catch((error: unknown) => {
        failed ??= { error };
      })
      .finally(() => running.delete(run));
    running.add(run);
  };
  const drain: DrainTasks = async () => {
    await Promise.all(running);
    if (failed !== undefined) throw failed.error;
  };
  let result: T;
  try {
    result = await body(start, drain);
  } catch (error) {
    await Promise.all(running);
    throw failed === undefined ? error : failed.error;
  }
  await drain();
  return result;
}
