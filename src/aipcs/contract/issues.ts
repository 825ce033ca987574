// The issue vocabulary of AIPCS validation failures and the path rendering of
// contract §3.2. Owns only texts, bounds and formatting; it never sees input
// values, so an issue can never echo what the caller sent.

import { codePointLength, codePointPrefix } from '../../common/code-points.js';

/** One step into a JSON document: an object key or an array index. */
export type PathSegment = string | number;

/** The request-shape vocabulary (contract §3.2). */
export type ShapeIssueCode = 'field_required' | 'unknown_field' | 'invalid_length' | 'invalid_value';

/** Codes only the library legacy importer emits (contract §4.12). */
export type LegacyIssueCode = 'legacy_field_unrecognised' | 'legacy_relationship_ambiguous';

export type IssueCode = ShapeIssueCode | LegacyIssueCode;

/** An issue as rendered in an error document; keys in contract order. */
export interface Issue {
  readonly code: IssueCode;
  readonly path: string;
  readonly message: string;
  readonly remediation: string | null;
}

export const MAX_ISSUES = 32;
export const MAX_ISSUE_PATH_LENGTH = 240;
const MAX_SEGMENT_LENGTH = 64;

const ISSUE_TEXTS: Readonly<Record<IssueCode, { readonly message: string; readonly remediation: string }>> = {
  field_required: {
    message: 'A required field is missing.',
    remediation: 'Provide the required field and retry.',
  },
  unknown_field: {
    message: 'The request contains an unsupported field.',
    remediation: 'Remove the unsupported field and retry.',
  },
  invalid_length: {
    message: 'The field has an invalid number of items or characters.',
    remediation: 'Adjust the field length to the documented bound and retry.',
  },
  invalid_value: {
    message: 'The field value is invalid.',
    remediation: 'Use a value allowed by the public contract and retry.',
  },
  legacy_field_unrecognised: {
    message: 'Every legacy field must be converted, explicitly discarded, or removed.',
    remediation: 'Remove unrecognised fields and retry the explicit legacy import.',
  },
  legacy_relationship_ambiguous: {
    message: 'Non-empty private-v1 relationships have no portable v2 interpretation.',
    remediation: 'Remove the relationship or recreate it as an explicit v2 foreign key.',
  },
};

// Python's str.isidentifier(), which the reference applies to each segment:
// XID_Start or underscore, then XID_Continue.
const IDENTIFIER_SEGMENT = /^[\p{XID_Start}_]\p{XID_Continue}*$/u;

/**
 * Renders a location as the contract's dot-joined path: indexes as digits,
 * unsafe or long segments as `<field>`, an empty location as `request`, at
 * most 240 characters.
 */
export function formatIssuePath(path: readonly PathSegment[]): string {
  if (path.length === 0) return 'request';
  const parts = path.map((segment) => {
    if (typeof segment === 'number') return String(segment);
    return IDENTIFIER_SEGMENT.test(segment) && codePointLength(segment) <= MAX_SEGMENT_LENGTH ? segment : '<field>';
  });
  return codePointPrefix(parts.join('.'), MAX_ISSUE_PATH_LENGTH);
}

/** Builds an issue with the fixed texts of its code. */
export function makeIssue(code: IssueCode, path: readonly PathSegment[] | string): Issue {
  const texts = ISSUE_TEXTS[code];
  return {
    code,
    path: typeof path === 'string' ? codePointPrefix(path, MAX_ISSUE_PATH_LENGTH) : formatIssuePath(path),
    message: texts.message,
    remediation: texts.remediation,
  };
}

/** An issue before its path is rendered; validators work with these. */
export interface RawIssue {
  readonly code: ShapeIssueCode;
  readonly path: readonly PathSegment[];
}

/**
 * Collects raw issues in validation order and stops accepting them at the
 * contract's bound, so walkers can ask `full` and stop early.
 */
export class IssueSink {
  private readonly items: RawIssue[] = [];
  private reported = 0;

  report(code: ShapeIssueCode, path: readonly PathSegment[]): void {
    this.reported++;
    if (this.items.length < MAX_ISSUES) this.items.push({ code, path: [...path] });
  }

  /** Every report, kept or not: lets a walker tell whether a subtree was clean. */
  get total(): number {
    return this.reported;
  }

  get count(): number {
    return this.items.length;
  }

  get full(): boolean {
    return this.items.length >= MAX_ISSUES;
  }

  get raw(): readonly RawIssue[] {
    return this.items;
  }

  toIssues(): Issue[] {
    return this.items.map((item) => makeIssue(item.code, item.path));
  }
}
