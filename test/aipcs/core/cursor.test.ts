// Cursors (contract §6.12) at unit level: a cursor is accepted only as the
// exact bytes issued. The same document spelled another way (keys in another
// order, a space) is altered bytes, and so are another kind, an extra key and
// another query, even where the check value still matches.

import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor } from '../../../src/aipcs/core/cursor.js';
import { fingerprintText } from '../../../src/aipcs/core/record-rules.js';

const codec = { sha256: (text: string) => createHash('sha256').update(text, 'utf8').digest('hex') };
const POSITION = '11111111-2222-4333-8444-555555555555';
const QUERY = { principal: 'agent-a', service_id: POSITION, schema_version: 1n, tool: 'list', query: { entity_name: 'note' } };

const textOf = (cursor: string): string => Buffer.from(cursor, 'base64url').toString('utf8');
const encode = (text: string): string => Buffer.from(text, 'utf8').toString('base64url');

describe('cursors', () => {
  it('give back the position of exactly the bytes issued', () => {
    const cursor = encodeCursor(codec, 'record', POSITION, QUERY);
    expect(decodeCursor(codec, 'record', cursor, QUERY)).toBe(POSITION);
    expect(decodeCursor(codec, 'record', encode(textOf(cursor)), QUERY)).toBe(POSITION);
  });

  it('refuse the same document spelled another way, and any other kind, key or query', () => {
    const cursor = encodeCursor(codec, 'record', POSITION, QUERY);
    const text = textOf(cursor);
    // The same members, the check value still right: only the spelling differs.
    const reordered = text.replace(/^\{(.*),("v":[^,}]*)\}$/, '{$2,$1}');
    expect(reordered).not.toBe(text);
    const refused = [encode(reordered), encode(text.replaceAll(',', ', ')), encode(text.replace(/\}$/, ',"extra":1}')), cursor.slice(0, -1), `${cursor}A`];
    for (const altered of refused) expect(() => decodeCursor(codec, 'record', altered, QUERY), altered).toThrow(expect.objectContaining({ code: 'validation_failed' }));
    expect(() => decodeCursor(codec, 'branch', cursor, QUERY)).toThrow(expect.objectContaining({ code: 'validation_failed' }));
    expect(() => decodeCursor(codec, 'record', cursor, { ...QUERY, tool: 'search' })).toThrow(expect.objectContaining({ code: 'validation_failed' }));
  });

  it('refuse a position no page could have ended on, even with a right check value', () => {
    const refused = (kind: 'record' | 'history' | 'branch', position: string) =>
      expect(() => decodeCursor(codec, kind, encodeCursor(codec, kind, position, QUERY), QUERY), `${kind} ${position}`).toThrow(expect.objectContaining({ code: 'validation_failed' }));
    const accepted = (kind: 'record' | 'history' | 'branch', position: string) => expect(decodeCursor(codec, kind, encodeCursor(codec, kind, position, QUERY), QUERY)).toBe(position);
    // Records and branches end on an id, history on an event sequence (a positive signed 64-bit integer).
    accepted('record', POSITION);
    accepted('branch', POSITION);
    accepted('history', '1');
    accepted('history', '9223372036854775807');
    refused('record', 'not-an-id');
    refused('record', '42');
    refused('branch', '42');
    refused('history', POSITION);
    refused('history', '0');
    refused('history', '01');
    refused('history', '9223372036854775808');
    refused('history', '99999999999999999999');
  });

  it('refuse a document whose position is not a string, as a bad cursor', () => {
    const query = codec.sha256(fingerprintText(QUERY));
    const body = { kind: 'record', position: 7, query, v: 1 };
    const forged = encode(fingerprintText({ ...body, check: codec.sha256(fingerprintText(body)).slice(0, 16) }));
    expect(() => decodeCursor(codec, 'record', forged, QUERY)).toThrow(expect.objectContaining({ code: 'validation_failed' }));
  });
});
