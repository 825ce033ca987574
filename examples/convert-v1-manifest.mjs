// Turns a legacy manifest version 1 document into a manifest v2, once and for
// all, with the package's one-way converter (no tool or command accepts
// version 1: design answers legacy_import_required). Review the result, then
// send it to aipcs_service_design as `schema`.
// Run: node examples/convert-v1-manifest.mjs legacy-manifest.json > manifest-v2.json
// Prints the v2 manifest on stdout and each warning on stderr; a document it
// cannot convert faithfully is refused with an error envelope on stderr, exit 1.
import { readFileSync } from 'node:fs';
import { parseJson } from '../dist/src/common/json.js';
import { failureEnvelope, renderContractJson, renderEnvelopeText } from '../dist/src/aipcs/contract/envelope.js';
import { convertLegacyV1, legacyImportResultToJson } from '../dist/src/aipcs/contract/manifest/convert-v1.js';

const input = process.argv[2];
if (input === undefined) {
  process.stderr.write('usage: node examples/convert-v1-manifest.mjs LEGACY_MANIFEST.json\n');
  process.exit(2);
}
const conversion = convertLegacyV1(parseJson(readFileSync(input, 'utf8')));
if (!conversion.ok) {
  process.stderr.write(`${renderEnvelopeText(failureEnvelope(conversion.error))}\n`);
  process.exit(1);
}
const result = legacyImportResultToJson(conversion.value);
for (const warning of result.warnings) process.stderr.write(`warning ${warning.code}: ${warning.message}\n`);
process.stdout.write(`${renderContractJson(result.manifest)}\n`);
