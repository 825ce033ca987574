// The notes manifest as plain JSON for tool calls (the lossless fixtures use
// bigint for integers; on the wire they are ordinary JSON numbers).

import { toPlainJson } from '../../src/common/json.js';
import { notesManifest, notesManifestV2 } from './manifests.js';

export const wireNotesManifest = (): Record<string, unknown> => toPlainJson(notesManifest()) as Record<string, unknown>;
export const wireNotesManifestV2 = (): Record<string, unknown> => toPlainJson(notesManifestV2()) as Record<string, unknown>;
