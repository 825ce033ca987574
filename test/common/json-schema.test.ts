import { describe, expect, it } from 'vitest';
import { validateJsonSchema, type JsonSchema } from '../../src/common/json-schema.js';
import { parseJson } from '../../src/common/json.js';

const schema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'limit'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 3, pattern: '^[a-z]+$' },
    limit: { type: 'integer', minimum: 1, maximum: '9223372036854775807' },
    ratio: { type: 'number' },
    tags: { type: 'array', maxItems: 2, items: { type: 'string' } },
    parent: { anyOf: [{ type: 'string' }, { type: 'null' }] },
    nested: { type: 'object', additionalProperties: false, properties: { x: { type: 'boolean' } }, required: [] },
  },
};

const check = (text: string) => validateJsonSchema(schema, parseJson(text, { maxBytes: 4096, maxDepth: 8 }));

describe('validateJsonSchema', () => {
  it('accepts a valid document', () => {
    expect(check('{"name":"ab","limit":9223372036854775807,"ratio":1,"tags":["x"],"parent":null,"nested":{"x":true}}')).toEqual([]);
  });

  it('reports missing, unknown, length and value problems with paths', () => {
    expect(check('{"extra":1}')).toEqual([
      { code: 'field_required', path: ['name'] },
      { code: 'field_required', path: ['limit'] },
      { code: 'unknown_field', path: ['extra'] },
    ]);
    expect(check('{"name":"abcd","limit":1}')).toEqual([{ code: 'invalid_length', path: ['name'] }]);
    expect(check('{"name":"A","limit":1}')).toEqual([{ code: 'invalid_value', path: ['name'] }]);
    expect(check('{"name":"a","limit":1,"tags":["x","y","z"]}')).toEqual([{ code: 'invalid_length', path: ['tags'] }]);
    expect(check('{"name":"a","limit":1,"tags":[1]}')).toEqual([{ code: 'invalid_value', path: ['tags', 0] }]);
    expect(check('{"name":"a","limit":1,"nested":{"y":1}}')).toEqual([{ code: 'unknown_field', path: ['nested', 'y'] }]);
    expect(check('{"name":"a","limit":1,"parent":3}')).toEqual([{ code: 'invalid_value', path: ['parent'] }]);
  });

  it('accepts only exact integers for integer fields', () => {
    expect(check('{"name":"a","limit":1.0}')).toEqual([{ code: 'invalid_value', path: ['limit'] }]);
    expect(check('{"name":"a","limit":true}')).toEqual([{ code: 'invalid_value', path: ['limit'] }]);
    expect(check('{"name":"a","limit":0}')).toEqual([{ code: 'invalid_value', path: ['limit'] }]);
    expect(check('{"name":"a","limit":9223372036854775808}')).toEqual([{ code: 'invalid_value', path: ['limit'] }]);
  });

  it('counts string length in code points', () => {
    expect(check('{"name":"\\ud83d\\ude00","limit":1}')).toEqual([{ code: 'invalid_value', path: ['name'] }]);
    expect(validateJsonSchema({ type: 'string', maxLength: 1 }, '\u{1F600}')).toEqual([]);
  });

  it('caps the number of issues', () => {
    const many = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, 1n]));
    expect(validateJsonSchema(schema, many)).toHaveLength(32);
  });
});
