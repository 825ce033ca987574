// The config's own JSON scan (scanConfigText): it runs when the parser
// refuses a number beyond f64 or deep nesting that serde would skip unread,
// and after every load to find a repeated `bot` field. Each case here failed
// on a small wrong edit of the scan (mutation review BF).

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/aigpt/config/config.js';
import { makeTempHome, type TempHome, writeConfig } from './support.js';

describe('config JSON scan', () => {
  let home: TempHome;
  beforeEach(() => {
    home = makeTempHome();
  });
  afterEach(() => home.cleanup());

  const failure = async (text: string): Promise<string> => {
    await writeConfig(home, text);
    return loadConfig(home.environment).then(
      () => 'loaded',
      (error: unknown) => (error as Error).message,
    );
  };

  it('takes every JSON token the parser takes past an ignored number beyond f64', async () => {
    const tokens = ['"a\\/b"', '"\\u00E9\\uD83D\\uDE00"', '"\\"\\\\\\b\\f\\n\\r\\t"', '-0.5e+3', '0', '1E5', '2e-7', '[]', '{}', '[[1],{"a":[]}]'];
    for (const token of tokens) {
      await writeConfig(home, `{"x":1e400,"y":${token},\r\n\t"bot" :\r{"memory":4,"z":${token}}}`);
      expect((await loadConfig(home.environment)).memory, token).toBe(4n);
    }
  });

  it('refuses what the parser refuses past an ignored number beyond f64, at the place the parser names', async () => {
    // Each is wrong once the ignored member's 1e400 is out of the way: the same message as with 1e299, where the parser finds it.
    const wrong = ['01', '1.', '1e', '+1', '"\\\'"', '"a\u001fb"', '[}', '[1}', '{"a":1]', '\f1', '"\\u00e"'];
    for (const token of wrong) {
      const text = `{"x":1e400,"y":${token},"bot":{}}`;
      const expected = await failure(text.replace('1e400', '1e299'));
      expect(expected, token).toMatch(/: not valid JSON at line 1, column \d+ \(The JSON document is malformed\.\)$/);
      expect(await failure(text), token).toBe(expected);
    }
  });

  it('finds a repeated field written with a carriage return or an upper-case escape, where the parse itself succeeds', async () => {
    expect(await failure('{"bot":{"did":"did:plc:a",\r"did":"did:plc:b"}}')).toContain(': bot.did appears twice');
    expect(await failure('{"bot":{"memory":1},"b\\u006Ft":{"memory":2}}')).toContain(': bot appears twice');
    // `bot` inside `bot` is no field of the reference's: repeats in it are ignored, like serde.
    await writeConfig(home, '{"bot":{"bot":{"did":1,"did":2},"memory":6}}');
    expect((await loadConfig(home.environment)).memory).toBe(6n);
  });

  it('names the first error in a document that is not an object, not a later one', async () => {
    const deep = `${'['.repeat(300)}${']'.repeat(300)}`;
    expect(await failure(`[${deep},tru]`)).toMatch(/: not valid JSON \(The JSON document is nested too deeply\.\)$/);
    expect(await failure('[1e400,tru]')).toMatch(/: not valid JSON \(The JSON document holds a number out of range\.\)$/);
  });

  it('reads a `-0` in bot.memory as serde does (a float) after an ignored number beyond f64 too', async () => {
    expect(await failure('{"x":1e400,"bot":{"memory":-0}}')).toContain(': bot.memory must be a non-negative integer');
  });

  it('bounds nesting in a field aigpt reads at 127 levels, as serde_json does', async () => {
    const nested = (levels: number): string => `{"bot":{"path":${'['.repeat(levels - 2)}${']'.repeat(levels - 2)}}}`;
    expect(await failure(nested(127))).toContain(': bot.path must be a string');
    expect(await failure(nested(128))).toMatch(/: not valid JSON \(The JSON document is nested too deeply\.\)$/);
  });

  it('reads a 1 MiB config whose `-0` grows it past 1 MiB when rewritten', async () => {
    const text = '{"bot":{"memory":-0}}'.padEnd(1024 * 1024, ' ');
    expect(await failure(text)).toContain(': bot.memory must be a non-negative integer');
  });
});
