import { describe, expect, it } from 'vitest';
import { FloatValue } from '../../../src/common/json.js';
import { CLI_INTERNAL_ERROR, type CliErrorDocument } from '../../../src/aipcs/cli/error-document.js';
import { failureLine, normaliseErrorDocument, renderOutcome, successLine, writeOutcome } from '../../../src/aipcs/cli/output.js';

const VALIDATION: CliErrorDocument = {
  code: 'validation_failed',
  message: 'Configuration failed public validation.',
  issues: [{ code: 'invalid_configuration', path: 'principal_id', message: 'The configuration value is invalid or unavailable.', remediation: 'Use a documented value and retry.' }],
  retryable: false,
};

describe('JSON envelopes (§1.3)', () => {
  it('renders a success as one compact line with keys in order', () => {
    expect(successLine({ profile: 'sqlite', registry: { status: 'ready', applied_revision: 4n, issue_code: null }, n: 5000, f: new FloatValue(1), r: 0.5 })).toBe(
      '{"ok":true,"result":{"profile":"sqlite","registry":{"status":"ready","applied_revision":4,"issue_code":null},"n":5000,"f":1.0,"r":0.5},"error":null}',
    );
  });

  it('escapes every non-ASCII character', () => {
    expect(successLine({ name: 'é😀\u2028' })).toBe('{"ok":true,"result":{"name":"\\u00e9\\ud83d\\ude00\\u2028"},"error":null}');
  });

  it('renders a failure with all four error keys in order', () => {
    expect(failureLine(VALIDATION)).toBe(
      '{"ok":false,"result":null,"error":{"code":"validation_failed","message":"Configuration failed public validation.",' +
        '"issues":[{"code":"invalid_configuration","path":"principal_id","message":"The configuration value is invalid or unavailable.",' +
        '"remediation":"Use a documented value and retry."}],"retryable":false}}',
    );
    expect(failureLine({ code: 'storage_busy', message: 'Storage is temporarily busy.', issues: [], retryable: true })).toBe(
      '{"ok":false,"result":null,"error":{"code":"storage_busy","message":"Storage is temporarily busy.","issues":[],"retryable":true}}',
    );
  });

  it('bounds the document: collapsed message ≤ 500, ≤ 32 issues, bounded issue fields', () => {
    const issue = { code: 'c'.repeat(200), path: 'p'.repeat(300), message: ` a \n\t b ${'m'.repeat(600)}`, remediation: null };
    const document = normaliseErrorDocument({
      code: 'validation_failed',
      message: `  several\n\twords   here ${'x'.repeat(600)}`,
      issues: Array.from({ length: 40 }, () => issue),
      retryable: false,
    });
    expect(document.message.startsWith('several words here x')).toBe(true);
    expect([...document.message]).toHaveLength(500);
    expect(document.issues).toHaveLength(32);
    expect(document.issues[0]?.code).toHaveLength(96);
    expect(document.issues[0]?.path).toHaveLength(240);
    expect(document.issues[0]?.message.startsWith('a b m')).toBe(true);
    expect(document.issues[0]?.message).toHaveLength(500);
    expect(document.issues[0]?.remediation).toBeNull();
    // In characters, never half of a surrogate pair.
    const astral = normaliseErrorDocument({ code: 'validation_failed', message: '\u{1F600}'.repeat(600), issues: [], retryable: false });
    expect(astral.message).toBe('\u{1F600}'.repeat(500));
  });

  it('bounds and collapses a remediation like a message, and names an issue without a path "request"', () => {
    const [issue] = normaliseErrorDocument({
      code: 'validation_failed',
      message: 'x',
      issues: [{ code: 'c', path: ' \n\t ', message: 'm', remediation: `  retry\n\twith   care ${'r'.repeat(600)}` }],
      retryable: false,
    }).issues;
    expect(issue?.remediation?.startsWith('retry with care r')).toBe(true);
    expect(issue?.remediation).toHaveLength(500);
    expect(issue?.path).toBe('request');
  });

  it('replaces an empty message and an unknown code', () => {
    expect(normaliseErrorDocument({ code: 'internal_error', message: ' \n ', issues: [], retryable: false }).message).toBe(
      'The request could not be processed.',
    );
    expect(normaliseErrorDocument({ code: 'no_such_code' as never, message: 'x', issues: [], retryable: false })).toEqual(CLI_INTERNAL_ERROR);
  });
});

describe('channels (§1.3)', () => {
  it('success: stdout only, exit 0', () => {
    expect(renderOutcome({ ok: true, result: { a: 1n } }, { format: 'json', command: 'admin' })).toEqual({
      stdout: '{"ok":true,"result":{"a":1},"error":null}\n',
      stderr: '',
      exitCode: 0,
    });
  });

  it('failure: stderr only', () => {
    expect(renderOutcome({ ok: false, error: VALIDATION }, { format: 'json', command: 'config' })).toEqual({
      stdout: '',
      stderr: `${failureLine(VALIDATION)}\n`,
      exitCode: 2,
    });
  });

  it('human failure lines go to stderr', () => {
    expect(renderOutcome({ ok: false, error: VALIDATION }, { format: 'human', command: 'config' })).toEqual({
      stdout: '',
      stderr:
        'error [validation_failed]: Configuration failed public validation.\n' +
        '- principal_id: The configuration value is invalid or unavailable.\n' +
        '  Use a documented value and retry.\n',
      exitCode: 2,
    });
  });

  it('serve prints no success envelope and always JSON failures', () => {
    expect(renderOutcome({ ok: true, result: { a: 1n } }, { format: 'json', command: 'serve' })).toEqual({ stdout: '', stderr: '', exitCode: 0 });
    const failure = renderOutcome({ ok: false, error: { code: 'internal_error', message: 'Server could not be started safely.', issues: [], retryable: false } }, { format: 'human', command: 'serve' });
    expect(failure).toEqual({
      stdout: '',
      stderr: '{"ok":false,"result":null,"error":{"code":"internal_error","message":"Server could not be started safely.","issues":[],"retryable":false}}\n',
      exitCode: 2,
    });
  });

  it('a result that cannot be rendered becomes internal_error instead of a crash (9.9)', () => {
    const nonFinite = renderOutcome({ ok: true, result: { x: Number.NaN } }, { format: 'json', command: 'admin' });
    expect(nonFinite).toEqual({ stdout: '', stderr: `${failureLine(CLI_INTERNAL_ERROR)}\n`, exitCode: 6 });
    const tooDeep = renderOutcome({ ok: true, result: { a: { b: { c: { d: { e: { f: 1n } } } } } } }, { format: 'human', command: 'admin' });
    expect(tooDeep).toEqual({ stdout: '', stderr: 'error [internal_error]: The request could not be completed safely.\n', exitCode: 6 });
    const inConfig = renderOutcome({ ok: true, result: { Bad: 1n } }, { format: 'human', command: 'config' });
    expect(inConfig.exitCode).toBe(2);
    expect(inConfig.stdout).toBe('');
  });

  it('writeOutcome writes to the given streams and returns the exit status', () => {
    const out: string[] = [];
    const err: string[] = [];
    const io = { stdout: { write: (text: string) => out.push(text) }, stderr: { write: (text: string) => err.push(text) } };
    expect(writeOutcome({ ok: true, result: { status: 'ready' } }, { format: 'human', command: 'admin' }, io)).toBe(0);
    expect(writeOutcome({ ok: false, error: { code: 'recovery_required', message: 'm', issues: [], retryable: false } }, { format: 'json', command: 'admin' }, io)).toBe(5);
    expect(out).toEqual(['status: ready\n']);
    expect(err).toEqual(['{"ok":false,"result":null,"error":{"code":"recovery_required","message":"m","issues":[],"retryable":false}}\n']);
  });
});
