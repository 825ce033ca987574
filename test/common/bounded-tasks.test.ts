// withBoundedTasks: never more than the bound in flight, no start after a
// failure, and nothing still running once it returns or throws.
import { describe, expect, it } from 'vitest';
import { withBoundedTasks } from '../../src/common/bounded-tasks.js';

function deferred(): { promise: Promise<void>; resolve: () => void; reject: (error: unknown) => void } {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<void>((ok, fail) => {
    resolve = ok;
    reject = fail;
  });
  return { promise, resolve, reject };
}

const tick = (): Promise<void> => new Promise((settle) => setImmediate(settle));

describe('withBoundedTasks', () => {
  it('keeps at most the bound in flight and returns the body’s value once all have ended', async () => {
    let running = 0;
    let most = 0;
    let ended = 0;
    const result = await withBoundedTasks(3, async (start) => {
      for (let n = 0; n < 20; n++) {
        await start(async () => {
          running++;
          most = Math.max(most, running);
          await tick();
          running--;
          ended++;
        });
      }
      return 'done';
    });
    expect(result).toBe('done');
    expect(most).toBe(3);
    expect(ended).toBe(20);
  });

  it('starts nothing after a failure, waits for the tasks still running, then throws the first failure', async () => {
    const slow = deferred();
    const started: number[] = [];
    let slowEnded = false;
    const run = withBoundedTasks(2, async (start) => {
      await start(async () => {
        started.push(0);
        await slow.promise;
        slowEnded = true;
      });
      await start(async () => {
        started.push(1);
        throw new Error('first');
      });
      await start(async () => {
        started.push(2);
        throw new Error('second');
      });
      await start(async () => {
        started.push(3);
      });
    });
    let settled = false;
    void run.catch(() => undefined).finally(() => (settled = true));
    await tick();
    await tick();
    expect(settled).toBe(false); // task 0 still runs
    slow.resolve();
    await expect(run).rejects.toThrow('first');
    expect(slowEnded).toBe(true);
    expect(started).toEqual([0, 1]);
  });

  it('throws the body’s own error when no task failed, after the started tasks have ended', async () => {
    let ended = false;
    await expect(
      withBoundedTasks(4, async (start) => {
        await start(async () => {
          await tick();
          ended = true;
        });
        throw new Error('body');
      }),
    ).rejects.toThrow('body');
    expect(ended).toBe(true);
  });

  it('drain waits for the tasks started so far, and throws their first failure', async () => {
    const order: string[] = [];
    await withBoundedTasks(4, async (start, drain) => {
      await start(async () => {
        await tick();
        order.push('task');
      });
      await drain();
      order.push('after drain');
    });
    expect(order).toEqual(['task', 'after drain']);
    await expect(
      withBoundedTasks(4, async (start, drain) => {
        await start(async () => {
          await tick();
          throw new Error('task');
        });
        await drain();
        order.push('not reached');
      }),
    ).rejects.toThrow('task');
    expect(order).toEqual(['task', 'after drain']);
  });

  it('throws the first of several task failures, not the last', async () => {
    await expect(
      withBoundedTasks(3, async (start) => {
        await start(async () => {
          await tick();
          throw new Error('first');
        });
        await start(async () => {
          for (let n = 0; n < 3; n++) await tick();
          throw new Error('last');
        });
      }),
    ).rejects.toThrow('first');
  });

  it('throws a task’s failure rather than a body error thrown after it', async () => {
    await expect(
      withBoundedTasks(2, async (start) => {
        await start(() => Promise.reject(new Error('task')));
        await tick();
        throw new Error('body');
      }),
    ).rejects.toThrow('task');
  });

  it('prefers a task’s failure to the body error it caused', async () => {
    await expect(
      withBoundedTasks(1, async (start) => {
        await start(() => Promise.reject(new Error('task')));
        await start(() => Promise.resolve()); // waits for the slot, then throws the task's error
        throw new Error('not reached');
      }),
    ).rejects.toThrow('task');
  });
});
