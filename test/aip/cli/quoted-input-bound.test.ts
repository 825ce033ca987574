// An error quotes back what it refuses (an ID argument, a field name, a
// config member, a duration) by at most 80 characters: aip's messages never
// grow with the input, whatever the user or a file hands it.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { aip, requireBuiltBin } from '../support/cli.js';
import { tempDir } from '../support/temp.js';

beforeAll(() => requireBuiltBin());

const LONG = 'g'.repeat(100_000);
const SHOWN = `"${'g'.repeat(77)}..."`;

describe('quoted input in error messages', () => {
  it('an ID argument, a duration and a size are quoted by their first 77 characters', async () => {
    const dir = await tempDir();
    expect((await aip(['--repo', '.', 'init'], { cwd: dir })).code).toBe(0);
    const show = await aip(['--repo', '.', 'show', LONG], { cwd: dir });
    expect(show.code).toBe(2);
    expect(show.stderr).toBe(`aip: usage: ${SHOWN} is not an ID, an ID prefix or HEAD\n`);
    const json = await aip(['--repo', '.', '--format', 'json', 'show', LONG], { cwd: dir });
    expect(JSON.parse(json.text)).toEqual({ error: { code: 'usage', message: `${SHOWN} is not an ID, an ID prefix or HEAD` } });
    const run = await aip(['--repo', '.', 'run', '--timeout', LONG, '--', 'true'], { cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`invalid duration ${SHOWN} (`);
    expect(run.stderr.length).toBeLessThan(300);
  });

  it('an unknown field of a put object and an unknown config member are quoted the same way', async () => {
    const dir = await tempDir();
    expect((await aip(['--repo', '.', 'init'], { cwd: dir })).code).toBe(0);
    const intent = {
      type: 'intent',
      version: 1,
      data: { title: 't', goal: 'g', constraints: [], context: [], parents: [], created_at: '2026-01-01T00:00:00.000000000Z', [LONG]: 1 },
    };
    await writeFile(join(dir, 'intent.json'), JSON.stringify(intent));
    const put = await aip(['--repo', '.', 'put', '--from', 'json', 'intent.json'], { cwd: dir });
    expect(put.code).toBe(5);
    expect(put.stderr).toBe(`aip: schema.unknown_field: data: unknown field ${SHOWN}\n`);

    const config = JSON.parse(await readFile(join(dir, '.aip', 'config.json'), 'utf8')) as Record<string, unknown>;
    await writeFile(join(dir, '.aip', 'config.json'), JSON.stringify({ ...config, [LONG]: 1 }));
    const head = await aip(['--repo', '.', 'head'], { cwd: dir });
    expect(head.stderr).toContain(`unknown member ${SHOWN}`);
    expect(head.stderr.length).toBeLessThan(400);
  });
});

describe('text output keeps each item on its line', () => {
  it('a log title, an evidence kind and a status path show control characters as escapes', async () => {
    const dir = await tempDir();
    expect((await aip(['--repo', '.', 'init'], { cwd: dir })).code).toBe(0);
    await writeFile(join(dir, 'a'), 'a');
    const forged = 'real\nstate 0000000000000000000000000000000000000000000000000000000000000000 (root)\u001b[2J';
    const snap = await aip(['--repo', '.', 'snapshot', '--title', forged, '--goal', 'g'], { cwd: dir });
    expect(snap.code, snap.stderr).toBe(0);
    expect((await aip(['--repo', '.', 'report', '--kind', 'k\nevidence x', '--command', 'c', '--result', 'pass'], { cwd: dir })).code).toBe(0);
    const log = await aip(['--repo', '.', 'log'], { cwd: dir });
    expect(log.code).toBe(0);
    const lines = log.text.trimEnd().split('\n');
    expect(lines.filter((line) => line.startsWith('state '))).toHaveLength(2);
    expect(lines.find((line) => line.startsWith('  intent '))).toMatch(/ real\\nstate 0{64} \(root\)\\u001b\[2J$/);
    expect(lines.find((line) => line.startsWith('  evidence '))).toMatch(/ k\\nevidence x pass \(reported\)$/);
    // The JSON presentation keeps the exact text.
    const json = JSON.parse((await aip(['--repo', '.', '--format', 'json', 'log'], { cwd: dir })).text) as { states: { intent?: { title: string } }[] };
    expect(json.states[0]?.intent?.title).toBe(forged);

    await writeFile(join(dir, 'b\nA fake'), 'b');
    const status = await aip(['--repo', '.', 'status'], { cwd: dir });
    expect(status.text).toBe('A b\\nA fake\n');
  });
});

describe('a state path in an error line', () => {
  // A state's path has no length bound but the object's size: one of 100 000
  // characters was named whole (checkout's `io`, run's `run.materialize`),
  // however long, in text and in the JSON error document.
  it('is cut past 1024 characters when the file cannot be written', async () => {
    const dir = await tempDir();
    expect((await aip(['init'], { cwd: dir })).code).toBe(0);
    await writeFile(join(dir, 'kept.txt'), 'kept\n');
    const made = await aip(['snapshot', '--title', 'a', '--goal', 'a'], { cwd: dir });
    expect(made.code, made.stderr).toBe(0);
    const recorded = /operation ([0-9a-f]{64})/.exec(made.text)![1]!;
    const operation = JSON.parse((await aip(['show', recorded], { cwd: dir })).text) as { id?: string; data: { effects: { path: string }[] } };
    delete operation.id;
    const long = 'y'.repeat(100_000);
    for (const effect of operation.data.effects) if (effect.path === 'kept.txt') effect.path = long;
    await writeFile(join(dir, 'op.json'), JSON.stringify(operation));
    const put = await aip(['put', '--from', 'json', 'op.json'], { cwd: dir });
    expect(put.code, put.stderr).toBe(0);
    const state = (await aip(['apply', put.text.trim()], { cwd: dir })).text.trim();
    const shown = `${'y'.repeat(1021)}...`;

    const checkout = await aip(['checkout', state, '--into', join(dir, 'out')], { cwd: dir });
    expect(checkout.code).toBe(6);
    expect(checkout.stderr).toBe(`aip: io: cannot write ${shown}: ENAMETOOLONG\n`);
    const json = await aip(['--format', 'json', 'checkout', state, '--into', join(dir, 'out')], { cwd: dir });
    expect(JSON.parse(json.text)).toEqual({ error: { code: 'io', message: `cannot write ${shown}: ENAMETOOLONG` } });
    const run = await aip(['run', '--state', state, '--', 'true'], { cwd: dir });
    expect(run.code).toBe(6);
    expect(run.stderr).toBe(`aip: run.materialize: cannot materialise state ${state}: cannot write ${shown}: ENAMETOOLONG\n`);
  });
});
