// Mutex: the units of work sharing one SQLite connection (a transaction spans
// awaits) or one aigpt writer run one at a time, in the order they asked, and
// a unit that fails lets the next one run.
import { describe, expect, it } from 'vitest';
import { Mutex } from '../../src/common/mutex.js';

const tick = (): Promise<void> => new Promise((settle) => setImmediate(settle));

describe('Mutex', () => {
  it('runs one unit at a time, in the order they were asked for, each to its end', async () => {
    const mutex = new Mutex();
    const events: string[] = [];
    const unit = (name: string, ticks: number) =>
      mutex.run(async () => {
        events.push(`${name} start`);
        for (let n = 0; n < ticks; n++) await tick();
        events.push(`${name} end`);
        return name;
      });
    const results = await Promise.all([unit('a', 3), unit('b', 1), unit('c', 2)]);
    expect(results).toEqual(['a', 'b', 'c']);
    expect(events).toEqual(['a start', 'a end', 'b start', 'b end', 'c start', 'c end']);
  });

  it('passes a unit’s failure to its caller and still runs the units after it', async () => {
    const mutex = new Mutex();
    const events: string[] = [];
    const failing = mutex.run(async () => {
      await tick();
      events.push('failing');
      throw new Error('unit');
    });
    const next = mutex.run(async () => {
      events.push('next');
      return 7;
    });
    await expect(failing).rejects.toThrow('unit');
    await expect(next).resolves.toBe(7);
    expect(events).toEqual(['failing', 'next']);
  });

  it('lets a unit asked for after the others ended run at once', async () => {
    const mutex = new Mutex();
    await mutex.run(() => Promise.resolve());
    let ran = false;
    const later = mutex.run(async () => {
      ran = true;
    });
    await later;
    expect(ran).toBe(true);
  });
});
