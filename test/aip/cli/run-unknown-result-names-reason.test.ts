// `aip run -- pyhton3 -V`: nothing starts, the evidence is stored with
// termination start_error and result unknown (exit 4, spec 8 step 2, 9.2), and
// the spec's result line is all the text output says. The reason (the
// evidence's `error`) now follows on stderr as a warning; stdout keeps exactly
// the spec's two lines, and --format json keeps stdout one document. The same
// for the other unknowns the line cannot explain: which signal ended the
// command, and why the workspace could not be judged.
import { describe, expect, it } from 'vitest';
import { aip, requireBuiltBin } from '../support/cli.js';
import { tempDir } from '../support/temp.js';

requireBuiltBin();

describe('aip run with a result the result line cannot explain', () => {
  it('names the reason on stderr; stdout and the evidence are unchanged', async () => {
    const dir = await tempDir();
    expect((await aip(['init'], { cwd: dir })).code).toBe(0);

    const run = await aip(['run', '--', 'no-such-command-aip-journey', '-V'], { cwd: dir });
    expect(run.code).toBe(4);
    expect(run.text).toMatch(/^evidence [0-9a-f]{64}\nresult unknown \(termination start_error, exit -, workspace clean\)\n$/);
    expect(run.stderr).toBe('aip: warning: the command did not start: executable not found: no-such-command-aip-journey\n');

    const id = run.text.split('\n')[0]!.slice('evidence '.length);
    const shown = JSON.parse((await aip(['show', id], { cwd: dir })).text) as { data: { error: string } };
    expect(shown.data.error).toBe('executable not found: no-such-command-aip-journey');

    const json = await aip(['--format', 'json', 'run', '--', 'no-such-command-aip-journey'], { cwd: dir });
    expect(json.code).toBe(4);
    expect(json.stderr).toBe('');

    const killed = await aip(['run', '--', 'sh', '-c', 'kill -9 $$'], { cwd: dir });
    expect(killed.code).toBe(4);
    expect(killed.text).toMatch(/\nresult unknown \(termination signaled, exit -, workspace clean\)\n$/);
    expect(killed.stderr).toBe('aip: warning: result unknown: terminated by signal SIGKILL\n');

    const dotAip = await aip(['run', '--', 'sh', '-c', 'mkdir .aip'], { cwd: dir });
    expect(dotAip.code).toBe(4);
    expect(dotAip.text).toMatch(/\nresult unknown \(termination exited, exit 0, workspace unknown\)\n$/);
    expect(dotAip.stderr).toBe('aip: warning: workspace unknown: the command created .aip in the evaluation directory\n');

    // A command that ran and ended by itself says nothing more.
    const ran = await aip(['run', '--', 'sh', '-c', 'exit 3'], { cwd: dir });
    expect(ran.code).toBe(1);
    expect(ran.stderr).toBe('');
  });
});
