// `.aip/config.json` (spec 7.2): strict parsing with defaults, and the text
// `aip init` writes. Owns no files itself; the repository reads and writes.
import { DEFAULT_MAX_OBJECT_BYTES } from '../core/cbor-profile.js';
import { failure, success, type Outcome } from '../core/errors.js';
import { parseJson, type JsonTree } from '../core/json-presentation.js';
import { quoted } from '../core/quote.js';

export interface RunDefaults {
  readonly timeoutNs: bigint;
  readonly outputLimit: number;
}

export interface RepositoryConfig {
  readonly maxObjectBytes: number;
  readonly run: RunDefaults;
}

/** `.aip/config.json` holds a few settings; a larger file is not one. */
export const MAX_CONFIG_FILE_BYTES = 1_048_576;
export const MIN_MAX_OBJECT_BYTES = 1_048_576;
export const MAX_MAX_OBJECT_BYTES = 1_073_741_824;
/** Room an artifact's envelope needs around its content (spec 7.2). */
export const ARTIFACT_ENVELOPE_ROOM = 64;

export const DEFAULT_CONFIG: RepositoryConfig = {
  maxObjectBytes: DEFAULT_MAX_OBJECT_BYTES,
  run: { timeoutNs: 600_000_000_000n, outputLimit: 1_048_576 },
};

export function defaultConfigText(): string {
  return `${JSON.stringify(
    {
      format: 'aip-repository',
      version: 1,
      max_object_bytes: DEFAULT_CONFIG.maxObjectBytes,
      run: { timeout_ns: Number(DEFAULT_CONFIG.run.timeoutNs), output_limit: DEFAULT_CONFIG.run.outputLimit },
    },
    null,
    2,
  )}\n`;
}

function members(tree: JsonTree | undefined, where: string, allowed: readonly string[]): Outcome<ReadonlyMap<string, JsonTree>> {
  if (!(tree instanceof Map)) return failure('repo.config', `${where} must be a JSON object`);
  const map = tree as ReadonlyMap<string, JsonTree>;
  for (const key of map.keys()) {
    if (!allowed.includes(key)) return failure('repo.config', `${where}: unknown member ${quoted(key)}`);
  }
  return success(map);
}

function integer(value: JsonTree | undefined): bigint | undefined {
  if (typeof value === 'number') return BigInt(value);
  if (typeof value === 'bigint') return value;
  return undefined;
}

export function parseConfig(text: string): Outcome<RepositoryConfig> {
  // One leading byte order mark is ignored (RFC 8259 section 8.1 allows it), as
  // `aip put --from json` and `.aipignore` ignore it: editors add one (D45).
  const parsed = parseJson(text.startsWith('\ufeff') ? text.slice(1) : text);
  if (!parsed.ok) return failure('repo.config', `config.json: ${parsed.error.message}`);
  const top = members(parsed.value, 'config.json', ['format', 'version', 'max_object_bytes', 'run']);
  if (!top.ok) return top;
  if (top.value.get('format') !== 'aip-repository') return failure('repo.config', 'config.json: format must be "aip-repository"');
  if (top.value.get('version') !== 1) return failure('repo.config', 'config.json: unsupported repository version (this reader knows version 1)');

  let maxObjectBytes = DEFAULT_CONFIG.maxObjectBytes;
  if (top.value.has('max_object_bytes')) {
    const n = integer(top.value.get('max_object_bytes'));
    if (n === undefined || n < BigInt(MIN_MAX_OBJECT_BYTES) || n > BigInt(MAX_MAX_OBJECT_BYTES)) {
      return failure('repo.config', `config.json: max_object_bytes must be an integer from ${MIN_MAX_OBJECT_BYTES} to ${MAX_MAX_OBJECT_BYTES}`);
    }
    maxObjectBytes = Number(n);
  }

  let timeoutNs = DEFAULT_CONFIG.run.timeoutNs;
  let outputLimit: number | undefined;
  if (top.value.has('run')) {
    const run = members(top.value.get('run'), 'config.json run', ['timeout_ns', 'output_limit']);
    if (!run.ok) return run;
    if (run.value.has('timeout_ns')) {
      const n = integer(run.value.get('timeout_ns'));
      if (n === undefined || n < 1n) return failure('repo.config', 'config.json: run.timeout_ns must be a positive integer');
      timeoutNs = n;
    }
    if (run.value.has('output_limit')) {
      const n = integer(run.value.get('output_limit'));
      if (n === undefined || n < 1n) return failure('repo.config', 'config.json: run.output_limit must be a positive integer');
      outputLimit = Number(n);
    }
  }
  const room = maxObjectBytes - ARTIFACT_ENVELOPE_ROOM;
  if (outputLimit === undefined) {
    // The 1 MiB default would not fit when max_object_bytes is within 64 bytes
    // of its 1 MiB minimum; a default must never make a valid config invalid (D25).
    outputLimit = Math.min(DEFAULT_CONFIG.run.outputLimit, room);
  } else if (outputLimit > room) {
    return failure('repo.config', `config.json: run.output_limit must be at most max_object_bytes - ${ARTIFACT_ENVELOPE_ROOM} (${room})`);
  }
  return success({ maxObjectBytes, run: { timeoutNs, outputLimit } });
}
