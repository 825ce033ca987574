// Interactive operator commands on a real pseudo-terminal: interactive only
// with --format human, a terminal on stdin and stdout and no --yes; prompts
// through /dev/tty; generated ids shown; declining is invalid_state with
// nothing admitted; no controlling terminal is invalid_request.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aipcs, freshDataRoot, materialisedService, rootArgs, seedService, serveOn } from '../../support/aipcs-admin.js';
import type { AipcsClient } from '../../support/aipcs-client.js';
import { aipcsBin } from '../../support/bins.js';

// Runs a command on a fresh pty (its controlling terminal), answers the first
// prompt, and reports the exit status and everything the terminal showed.
const WITH_TTY = `
import json, os, pty, select, sys
argv, answer = json.loads(sys.argv[1]), sys.argv[2]
extra = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
piped = os.pipe() if extra.get('stdout') == 'pipe' else None
pid, fd = pty.fork()
if pid == 0:
    if extra.get('stdin') == 'null':
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    if piped:
        os.dup2(piped[1], 1)
    os.execv(argv[0], argv)
if piped:
    os.close(piped[1])
out, answered = b'', False
while True:
    ready, _, _ = select.select([fd], [], [], 30)
    if not ready:
        break
    try:
        data = os.read(fd, 4096)
    except OSError:
        break
    if not data:
        break
    out += data
    if not answered and (b'[y/N] ' in out or b'to confirm: ' in out):
        for path, text in extra.get('before_answer', []):
            with open(path, 'w') as changed:
                changed.write(text)
        os.write(fd, b'\\x04' if answer == '<Ctrl-D>' else (answer + '\\n').encode())
        answered = True
_, status = os.waitpid(pid, 0)
stdout = b''
if piped:
    while True:
        data = os.read(piped[0], 65536)
        if not data:
            break
        stdout += data
print(json.dumps({'status': os.waitstatus_to_exitcode(status), 'output': out.decode('utf-8', 'replace'), 'stdout': stdout.decode('utf-8', 'replace')}))
`;

// Terminals on stdin and stdout, but no controlling terminal (a new session that never opens one).
const WITHOUT_CTTY = `
import json, os, subprocess, sys
argv = json.loads(sys.argv[1])
master, slave = os.openpty()
child = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
os.close(slave)
out = b''
while True:
    try:
        data = os.read(master, 4096)
    except OSError:
        break
    if not data:
        break
    out += data
print(json.dumps({'status': child.wait(), 'output': out.decode('utf-8', 'replace')}))
`;

interface TerminalSetup {
  /** stdin from /dev/null instead of the terminal. */
  readonly stdin?: 'null';
  /** stdout to a pipe (reported as `stdout`) instead of the terminal. */
  readonly stdout?: 'pipe';
  /** Files written, as [path, text], just before the prompt is answered. */
  readonly before_answer?: readonly (readonly [string, string])[];
}

function onTerminal(args: string[], answer = 'y', setup: TerminalSetup = {}): { status: number; output: string; stdout: string } {
  const text = execFileSync('python3', ['-c', WITH_TTY, JSON.stringify([process.execPath, aipcsBin(), ...args]), answer, JSON.stringify(setup)], { encoding: 'utf8', timeout: 60_000 });
  return JSON.parse(text) as { status: number; output: string; stdout: string };
}

const UUID = /operation_id: ([0-9a-f-]{36})/;

describe('interactive operator commands', () => {
  let dataRoot: string;
  let client: AipcsClient;
  let args: string[];

  beforeAll(async () => {
    dataRoot = freshDataRoot();
    client = await serveOn(dataRoot);
    args = rootArgs(dataRoot);
  });

  afterAll(async () => {
    await client.close();
  });

  it('reads the revision, generates an operation id, shows both and proceeds on y', async () => {
    const serviceId = await seedService(client, 'tty_suspend');
    const run = onTerminal(['service', 'suspend', serviceId, '--format', 'human', ...args], 'Yes');
    expect(run.status).toBe(0);
    expect(run.output).toContain(`service_id: ${serviceId}`);
    expect(run.output).toContain('transition: active -> suspended');
    expect(run.output).toContain('expected_revision: 1');
    expect(run.output).toContain('Record the operation_id');
    const operationId = UUID.exec(run.output)?.[1];
    expect(operationId).toBeDefined();
    expect(run.output).toContain('operation: suspend');
    expect(run.output).toContain(`operation_id: ${operationId as string}`);
    expect(run.output).toContain('service.operational_status: suspended');
  });

  it('does not prompt a suspend whose values were all given, but always prompts an archive; declining admits nothing', async () => {
    const serviceId = await seedService(client, 'tty_archive');
    const declined = onTerminal(['service', 'archive', serviceId, '--expected-revision', '1', '--operation-id', '00000000-0000-4000-8000-00000000aa01', '--format', 'human', ...args], 'n');
    expect(declined.status).toBe(3);
    expect(declined.output).toContain('transition: active -> archived');
    expect(declined.output).toContain('error [invalid_state]');
    expect(aipcs(['service', 'inspect', serviceId, ...args]).envelope.result).toMatchObject({ operational_status: 'active', service_revision: 1 });
    // The operation id was not consumed.
    const accepted = onTerminal(['service', 'archive', serviceId, '--expected-revision', '1', '--operation-id', '00000000-0000-4000-8000-00000000aa01', '--format', 'human', ...args], 'y');
    expect(accepted.status).toBe(0);
    const noPrompt = onTerminal(['service', 'restore', serviceId, '--expected-revision', '2', '--operation-id', '00000000-0000-4000-8000-00000000aa02', '--format', 'human', ...args], 'n');
    expect(noPrompt.status).toBe(0);
    expect(noPrompt.output).not.toContain('[y/N]');
  });

  it('ending the answer with Ctrl-D declines, and the error starts a line of its own', async () => {
    const serviceId = await seedService(client, 'tty_eof');
    const declined = onTerminal(['service', 'archive', serviceId, '--format', 'human', ...args], '<Ctrl-D>');
    expect(declined.status).toBe(3);
    expect(declined.output).toMatch(/\[y\/N\] \r?\nerror \[invalid_state\]/);
    expect(aipcs(['service', 'inspect', serviceId, ...args]).envelope.result).toMatchObject({ operational_status: 'active', service_revision: 1 });
  });

  it('a fresh transition or purge the service status does not allow is refused before any prompt', async () => {
    const serviceId = await seedService(client, 'tty_refused');
    for (const command of [['service', 'resume'], ['service', 'restore'], ['service', 'purge', '--override']]) {
      const run = onTerminal([...command.slice(0, 2), serviceId, ...command.slice(2), '--format', 'human', ...args], serviceId);
      expect([run.status, run.output.includes('[y/N]') || run.output.includes('Type the service id')], command.join(' ')).toEqual([3, false]);
      expect(run.output).toContain('error [unsupported_transition]');
    }
    expect(aipcs(['service', 'inspect', serviceId, ...args]).envelope.result).toMatchObject({ operational_status: 'active', service_revision: 1 });
  });

  it('purge asks for the exact service id to be typed', async () => {
    const serviceId = await seedService(client, 'tty_purge');
    expect(aipcs(['service', 'archive', serviceId, '--expected-revision', '1', '--operation-id', '00000000-0000-4000-8000-00000000bb01', '--yes', ...args]).status).toBe(0);
    const wrong = onTerminal(['service', 'purge', serviceId, '--override', '--format', 'human', ...args], 'yes');
    expect(wrong.status).toBe(3);
    expect(wrong.output).toContain('authority: explicit_override');
    expect(wrong.output).toContain('error [invalid_state]');
    const typed = onTerminal(['service', 'purge', serviceId, '--override', '--format', 'human', ...args], serviceId);
    expect(typed.status).toBe(0);
    expect(typed.output).toContain('tombstone.authority: explicit_override');
    // An interactive lookup of a purged (or unknown) service is not_found.
    const gone = onTerminal(['service', 'resume', serviceId, '--format', 'human', ...args]);
    expect(gone.status).toBe(3);
    expect(gone.output).toContain('error [not_found]');
  });

  it('purge by receipt shows the receipt it will rely on, and purges once the id is typed', async () => {
    const serviceId = await materialisedService(client, 'tty_purge_receipt');
    expect(aipcs(['service', 'archive', serviceId, '--expected-revision', '3', '--operation-id', '00000000-0000-4000-8000-00000000bb02', '--yes', ...args]).status).toBe(0);
    const path = join(mkdtempSync(join(tmpdir(), 'aipcs-tty-')), 'out.jsonl');
    const exported = aipcs(['export', serviceId, '--output', path, '--expected-revision', '4', '--operation-id', '00000000-0000-4000-8000-00000000bb03', ...args]);
    const receiptId = (exported.envelope.result?.['receipt'] as Record<string, string>)['receipt_id'] as string;
    const run = onTerminal(['service', 'purge', serviceId, '--receipt', receiptId, '--format', 'human', ...args], serviceId);
    expect(run.status).toBe(0);
    expect(run.output).toContain('operational_status: archived');
    expect(run.output).toContain('expected_revision: 4');
    expect(run.output).toContain(`authority: verified_receipt:${receiptId}`);
    expect(run.output).toContain('Record the operation_id');
    expect(run.output).toContain('tombstone.authority: verified_receipt');
  });

  it('export prompts when it generated a value; import always prompts after validation', async () => {
    const serviceId = await materialisedService(client, 'tty_transfer');
    expect(aipcs(['service', 'suspend', serviceId, '--expected-revision', '3', '--operation-id', '00000000-0000-4000-8000-00000000cc01', ...args]).status).toBe(0);
    const path = join(mkdtempSync(join(tmpdir(), 'aipcs-tty-')), 'out.jsonl');
    const exported = onTerminal(['export', serviceId, '--output', path, '--format', 'human', ...args]);
    expect(exported.status).toBe(0);
    expect(exported.output).toContain('operational_status: suspended');
    expect(exported.output).toContain('expected_revision: 4');
    expect(exported.output).toContain('receipt.verification: verified');

    const destination = freshDataRoot();
    await (await serveOn(destination)).close();
    const imported = onTerminal(['import', '--input', path, '--format', 'human', ...rootArgs(destination)]);
    expect(imported.status).toBe(0);
    for (const field of [`service_id: ${serviceId}`, 'domain_name: tty_transfer', 'source_backend: sqlite', 'destination_backend: sqlite', 'frame_count: 3', 'root_sha256: ']) {
      expect(imported.output).toContain(field);
    }
    expect(imported.output).toContain('operation: import');
    // Its operation id was generated: the prompt asks the operator to record it.
    expect(imported.output).toContain('Record the operation_id');
  });

  it('--yes on a terminal is machine mode; no controlling terminal is invalid_request', async () => {
    const serviceId = await seedService(client, 'tty_machine');
    const machine = onTerminal(['service', 'suspend', serviceId, '--format', 'human', '--yes', ...args]);
    expect(machine.status).toBe(2);
    expect(machine.output).toContain('error [validation_failed]');
    const text = execFileSync('python3', ['-c', WITHOUT_CTTY, JSON.stringify([process.execPath, aipcsBin(), 'service', 'suspend', serviceId, '--format', 'human', ...args])], { encoding: 'utf8', timeout: 60_000 });
    const detached = JSON.parse(text) as { status: number; output: string };
    expect(detached.status).toBe(2);
    expect(detached.output).toContain('error [invalid_request]');
    expect(aipcs(['service', 'inspect', serviceId, ...args]).envelope.result).toMatchObject({ operational_status: 'active', service_revision: 1 });
  });

  it('is machine mode unless stdin and stdout are both terminals and the format is human', async () => {
    const serviceId = await seedService(client, 'tty_not_both');
    const suspend = ['service', 'suspend', serviceId];
    const stdoutPiped = onTerminal([...suspend, '--format', 'human', ...args], 'y', { stdout: 'pipe' });
    const stdinNull = onTerminal([...suspend, '--format', 'human', ...args], 'y', { stdin: 'null' });
    const json = onTerminal([...suspend, ...args], 'y');
    for (const [name, run] of Object.entries({ stdoutPiped, stdinNull, json })) {
      expect([run.status, run.output.includes('[y/N]')], name).toEqual([2, false]);
    }
    expect(stdoutPiped.output).toContain('error [validation_failed]');
    expect(stdoutPiped.stdout).toBe('');
    expect(stdinNull.output).toContain('error [validation_failed]');
    expect(json.output).toContain('"code":"validation_failed"');
    expect(aipcs(['service', 'inspect', serviceId, ...args]).envelope.result).toMatchObject({ operational_status: 'active', service_revision: 1 });
  });

  it('prompts when it read the revision, though the operation id was given; declining admits nothing', async () => {
    const serviceId = await seedService(client, 'tty_read_revision');
    const run = onTerminal(['service', 'suspend', serviceId, '--operation-id', '00000000-0000-4000-8000-00000000dd01', '--format', 'human', ...args], 'n');
    expect(run.status).toBe(3);
    expect(run.output).toContain('expected_revision: 1');
    expect(run.output).toContain('operation_id: 00000000-0000-4000-8000-00000000dd01');
    expect(run.output).toContain('[y/N]');
    expect(run.output).not.toContain('Record the operation_id');
    expect(run.output).toContain('error [invalid_state]');
    expect(aipcs(['service', 'inspect', serviceId, ...args]).envelope.result).toMatchObject({ operational_status: 'active', service_revision: 1 });
  });

  it('export never overwrites a file that appeared at --output while it waited for the answer (already_exists)', async () => {
    const serviceId = await materialisedService(client, 'tty_export_race');
    expect(aipcs(['service', 'suspend', serviceId, '--expected-revision', '3', '--operation-id', '00000000-0000-4000-8000-00000000dd02', ...args]).status).toBe(0);
    const folder = mkdtempSync(join(tmpdir(), 'aipcs-tty-'));
    const path = join(folder, 'out.jsonl');
    const run = onTerminal(['export', serviceId, '--output', path, '--format', 'human', ...args], 'y', { before_answer: [[path, 'the operator file\n']] });
    expect(run.status).toBe(3);
    expect(run.output).toContain('error [already_exists]');
    expect(readFileSync(path, 'utf8')).toBe('the operator file\n');
    expect(readdirSync(folder)).toEqual(['out.jsonl']);
    // The export itself completed: its operation id replays it to a new path.
    const operationId = UUID.exec(run.output)?.[1] as string;
    const replay = aipcs(['export', serviceId, '--output', join(folder, 'again.jsonl'), '--expected-revision', '4', '--operation-id', operationId, ...args]);
    expect(replay.status).toBe(0);
  });

  it('import stages the artefact it validated, though the input file changed while it waited for the answer', async () => {
    const serviceId = await materialisedService(client, 'tty_import_changed');
    expect(aipcs(['service', 'suspend', serviceId, '--expected-revision', '3', '--operation-id', '00000000-0000-4000-8000-00000000dd03', ...args]).status).toBe(0);
    const path = join(mkdtempSync(join(tmpdir(), 'aipcs-tty-')), 'out.jsonl');
    expect(aipcs(['export', serviceId, '--output', path, '--expected-revision', '4', '--operation-id', '00000000-0000-4000-8000-00000000dd04', ...args]).status).toBe(0);
    const destination = freshDataRoot();
    await (await serveOn(destination)).close();
    const imported = onTerminal(['import', '--input', path, '--format', 'human', ...rootArgs(destination)], 'y', { before_answer: [[path, 'not an artifact\n']] });
    expect(imported.status).toBe(0);
    expect(imported.output).toContain('operation: import');
    expect(aipcs(['service', 'inspect', serviceId, ...rootArgs(destination)]).envelope.result).toMatchObject({ domain_name: 'tty_import_changed', operational_status: 'suspended' });
  });
});
