// Applying and diffing file maps (spec 6), directly: the repository builds
// operations with diffFiles and verification applies them with applyEffects.
import { describe, expect, it } from 'vitest';
import { applyEffects, diffFiles, resultingState, sameFiles } from '../../../src/aip/core/effects.js';
import type { FileEntry, OperationV1, StateV1 } from '../../../src/aip/core/objects.js';
import { ID, OBJECTS } from '../support/vectors.js';

const a: FileEntry = { artifact: ID.V2, executable: false };
const b: FileEntry = { artifact: ID.V3, executable: false };

describe('effects', () => {
  it('applies removals, additions and replacements to a copy of the base', () => {
    const base = new Map([['keep', a], ['gone', a], ['changed', a]]);
    const result = applyEffects(base, [
      { path: 'changed', before: a, after: { ...a, executable: true } },
      { path: 'gone', before: a, after: null },
      { path: 'new', before: null, after: b },
    ]);
    expect(result).toEqual(new Map([['keep', a], ['changed', { ...a, executable: true }], ['new', b]]));
    // The base is a stored state's file map, read again by later checks.
    expect(base).toEqual(new Map([['keep', a], ['gone', a], ['changed', a]]));
  });

  it('diffs into one effect per differing path, before and after on their sides, sorted bytewise', () => {
    // Inserted out of order; U+1F600 sorts before U+FFFD in UTF-16 units but after it in UTF-8 bytes.
    const before = new Map([['same', a], ['\u{1f600}', a], ['exec', a], ['\ufffd', b]]);
    const after = new Map([['\ufffd', a], ['same', a], ['exec', { ...a, executable: true }], ['added', b]]);
    expect(diffFiles(before, after)).toEqual([
      { path: 'added', before: null, after: b },
      { path: 'exec', before: a, after: { ...a, executable: true } },
      { path: '\ufffd', before: b, after: a },
      { path: '\u{1f600}', before: a, after: null },
    ]);
    expect(sameFiles(applyEffects(before, diffFiles(before, after)), after)).toBe(true);
    expect(diffFiles(after, new Map(after))).toEqual([]);
  });

  it('derives the vectors V6 and V12 as the resulting states of V5 and V11', () => {
    const state = (name: 'V1' | 'V6' | 'V12') => OBJECTS[name] as StateV1;
    expect(resultingState(ID.V5, OBJECTS.V5 as OperationV1, state('V1').data.files)).toEqual(state('V6'));
    expect(resultingState(ID.V11, OBJECTS.V11 as OperationV1, state('V6').data.files)).toEqual(state('V12'));
  });
});
