// Property tests: arbitrary arguments to any tool never crash the parser and
// always end in a command or a contract error with bounded issues.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { JsonObject, JsonValue } from '../../../src/common/json.js';
import { AipcsError } from '../../../src/aipcs/contract/error-codes.js';
import { renderEnvelopeText, failureEnvelope } from '../../../src/aipcs/contract/envelope.js';
import { parseToolRequest } from '../../../src/aipcs/contract/requests/parse-request.js';
import { INPUT_SCHEMAS, TOOL_NAMES } from '../../../src/aipcs/contract/tool-catalogue.js';

const scalar: fc.Arbitrary<JsonValue> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.string({ maxLength: 12 }),
  fc.constantFrom('3fa85f64-5717-4562-b3fc-2c963f66afa6', 'primary', 'assign', 'stale', 'note', 'release-notes', '__aipcs_x', 'a+b', ''),
  fc.bigInt({ min: -(2n ** 64n), max: 2n ** 64n }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);
const value: fc.Arbitrary<JsonValue> = fc.letrec<{ v: JsonValue }>((tie) => ({
  v: fc.oneof({ depthSize: 'small' }, scalar, fc.array(tie('v'), { maxLength: 3 }), fc.dictionary(fc.string({ maxLength: 6 }), tie('v'), { maxKeys: 3 })),
})).v;

describe('request properties', () => {
  it('parses any arguments for any tool into a command or a bounded contract error', () => {
    const argsFor = fc.constantFrom(...TOOL_NAMES).chain((tool) => {
      const known = Object.keys(INPUT_SCHEMAS[tool].properties ?? {});
      const key = known.length > 0 ? fc.oneof(fc.constantFrom(...known), fc.string({ maxLength: 6 })) : fc.string({ maxLength: 6 });
      return fc.tuple(fc.constant(tool), fc.array(fc.tuple(key, value), { maxLength: 8 }));
    });
    fc.assert(
      fc.property(argsFor, ([tool, entries]) => {
        const args: JsonObject = {};
        for (const [key, member] of entries) Object.defineProperty(args, key, { value: member, enumerable: true, writable: true, configurable: true });
        const result = parseToolRequest(tool, args);
        if (result.ok) {
          expect(result.command.tool).toBe(tool);
        } else {
          expect(result.error).toBeInstanceOf(AipcsError);
          expect(result.error.issues.length).toBeLessThanOrEqual(32);
          const text = renderEnvelopeText(failureEnvelope(result.error));
          expect(JSON.parse(text).ok).toBe(false);
        }
      }),
      { numRuns: 600 },
    );
  });
});
