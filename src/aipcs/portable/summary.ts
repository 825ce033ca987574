// The artefact summary as the CLI prints it (operations spec §1.9.4):
// snake_case keys in the reference's order, counts per section. Integers are
// bigint so every JSON rendering writes them as integers.

import type { JsonObject } from '../../common/json.js';
import type { BundleSummary } from './content.js';

export function summaryToJson(summary: BundleSummary): JsonObject {
  const sections: JsonObject = {};
  for (const section of summary.sections) sections[section.kind] = BigInt(section.count);
  return {
    export_format_version: BigInt(summary.exportFormatVersion),
    source_backend: summary.sourceBackend,
    root_sha256: summary.rootSha256,
    frame_count: BigInt(summary.frameCount),
    total_byte_count: BigInt(summary.totalByteCount),
    sections,
  };
}
