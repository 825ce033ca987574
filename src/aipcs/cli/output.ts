// The output channels of `aipcs` (operations spec §1.3): a success is one
// compact JSON line on stdout, a failure one line on stderr, `--format human`
// prints key/value lines instead, and `serve` prints only failures, always as
// JSON. Pure renderers plus one thin writer; no process state is touched here.

import { renderJson } from '../../common/json.js';
import { CLI_INTERNAL_ERROR, isCliErrorCode, type CliErrorDocument, type CliIssue } from './error-document.js';
import { exitCodeForError, EXIT_SUCCESS, type CommandKind, type ExitCode } from './exit-codes.js';
import { renderHumanError, renderHumanResult, type CliObject } from './human-format.js';
import { collapseWhitespace } from '../config/text-rules.js';
import { codePointPrefix } from '../../common/code-points.js';

export type OutputFormat = 'json' | 'human';

export type CliOutcome = { readonly ok: true; readonly result: CliObject } | { readonly ok: false; readonly error: CliErrorDocument };

export interface OutputOptions {
  /** `serve` has no `--format`; its failures are always JSON. */
  readonly format: OutputFormat;
  readonly command: CommandKind;
}

export interface RenderedOutcome {
  /** Text for stdout, newline-terminated, or '' when nothing is printed there. */
  readonly stdout: string;
  /** Text for stderr, newline-terminated, or ''. */
  readonly stderr: string;
  readonly exitCode: ExitCode;
}

const JSON_OPTIONS = { keyOrder: 'insertion', asciiOnly: true, floatStyle: 'python' } as const;
const MAX_ISSUES = 32;
const MAX_MESSAGE = 500;
const MAX_ISSUE_CODE = 96;
const MAX_ISSUE_PATH = 240;
const FALLBACK_MESSAGE = 'The request could not be processed.';

function boundedText(text: string, max: number): string {
  return codePointPrefix(collapseWhitespace(text), max);
}

/**
 * The document exactly as printed: whitespace-collapsed message of at most
 * 500 characters, at most 32 issues, each field within its bound. An unknown
 * code (a bug upstream) becomes the generic internal error.
 */
export function normaliseErrorDocument(error: CliErrorDocument): CliErrorDocument {
  if (!isCliErrorCode(error.code)) return CLI_INTERNAL_ERROR;
  const issues: CliIssue[] = error.issues.slice(0, MAX_ISSUES).map((issue) => ({
    code: boundedText(issue.code, MAX_ISSUE_CODE),
    path: boundedText(issue.path, MAX_ISSUE_PATH) || 'request',
    message: boundedText(issue.message, MAX_MESSAGE),
    remediation: issue.remediation === null ? null : boundedText(issue.remediation, MAX_MESSAGE),
  }));
  return {
    code: error.code,
    message: boundedText(error.message, MAX_MESSAGE) || FALLBACK_MESSAGE,
    issues,
    retryable: error.retryable === true,
  };
}

/** `{"ok":true,"result":…,"error":null}`; throws only if the result holds a non-finite number. */
export function successLine(result: CliObject): string {
  return renderJson({ ok: true, result, error: null }, JSON_OPTIONS);
}

/** `{"ok":false,"result":null,"error":{"code","message","issues","retryable"}}` of the normalised document. */
export function failureLine(error: CliErrorDocument): string {
  const document = normaliseErrorDocument(error);
  const rendered = {
    ok: false,
    result: null,
    error: {
      code: document.code,
      message: document.message,
      issues: document.issues.map((issue) => ({
        code: issue.code,
        path: issue.path,
        message: issue.message,
        remediation: issue.remediation,
      })),
      retryable: document.retryable,
    },
  };
  return renderJson(rendered, JSON_OPTIONS);
}

function renderFailure(error: CliErrorDocument, options: OutputOptions): RenderedOutcome {
  const document = normaliseErrorDocument(error);
  const human = options.format === 'human' && options.command !== 'serve';
  const text = human ? renderHumanError(document) : failureLine(document);
  return { stdout: '', stderr: `${text}\n`, exitCode: exitCodeForError(document, options.command) };
}

/**
 * What to print where, and the exit status. A result that cannot be rendered
 * (human bounds, a non-finite number) becomes `internal_error` rather than a
 * crash after partial output (reference defect, spec §9.9).
 */
export function renderOutcome(outcome: CliOutcome, options: OutputOptions): RenderedOutcome {
  if (!outcome.ok) return renderFailure(outcome.error, options);
  if (options.command === 'serve') return { stdout: '', stderr: '', exitCode: EXIT_SUCCESS };
  if (options.format === 'human') {
    const human = renderHumanResult(outcome.result);
    if (!human.ok) return renderFailure(CLI_INTERNAL_ERROR, options);
    return { stdout: `${human.text}\n`, stderr: '', exitCode: EXIT_SUCCESS };
  }
  let line: string;
  try {
    line = successLine(outcome.result);
  } catch {
    return renderFailure(CLI_INTERNAL_ERROR, options);
  }
  return { stdout: `${line}\n`, stderr: '', exitCode: EXIT_SUCCESS };
}

export interface OutputStreams {
  readonly stdout: { write(text: string): unknown };
  readonly stderr: { write(text: string): unknown };
}

/** Writes the rendered outcome to the given streams and returns the exit status for process.exitCode. */
export function writeOutcome(outcome: CliOutcome, options: OutputOptions, io: OutputStreams): ExitCode {
  const rendered = renderOutcome(outcome, options);
  if (rendered.stdout !== '') io.stdout.write(rendered.stdout);
  if (rendered.stderr !== '') io.stderr.write(rendered.stderr);
  return rendered.exitCode;
}
