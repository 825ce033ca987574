// AIP object IDs: throughput of computing an artifact's object ID (and of the
// full encode and the verified decode) for 1 KiB and 1 MiB contents, each as
// a ratio to raw node:crypto SHA-256 over the same content, measured in the
// same run with interleaved rounds. Prints a markdown section.
// Needs `npm run build` first (imports from dist/).

import { createHash, randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const { objectId, encodeObject, decodeWithId, makeArtifact } = await import(join(here, '..', 'dist', 'src', 'aip', 'core', 'codec.js'));

const TARGET_RATIO = 1.5;
const ROUNDS = 15;
const sizes = [
  { label: '1 KiB', bytes: 1024, iterations: 20_000 },
  { label: '1 MiB', bytes: 1024 * 1024, iterations: 40 },
];

function mustOk(outcome) {
  if (!outcome.ok) throw new Error(`${outcome.error.code}: ${outcome.error.message}`);
  return outcome.value;
}

/** Nanoseconds per call of fn, over `iterations` calls. */
function timePerCall(fn, iterations) {
  const start = process.hrtime.bigint();
  for (let i = 0; i < iterations; i++) fn();
  return Number(process.hrtime.bigint() - start) / iterations;
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

const rows = [];
for (const size of sizes) {
  const content = new Uint8Array(randomBytes(size.bytes));
  const artifact = makeArtifact(content);
  const encoded = mustOk(encodeObject(artifact));
  if (mustOk(objectId(artifact)) !== encoded.id) throw new Error('streamed and encoded IDs differ');

  const cases = {
    raw: () => createHash('sha256').update(content).digest('hex'),
    id: () => mustOk(objectId(artifact)),
    encode: () => mustOk(encodeObject(artifact)).id,
    decode: () => mustOk(decodeWithId(encoded.bytes)).id,
  };
  for (const fn of Object.values(cases)) timePerCall(fn, Math.ceil(size.iterations / 4)); // warm-up

  const samples = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
  const ratios = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
  for (let round = 0; round < ROUNDS; round++) {
    globalThis.gc?.();
    const raw = timePerCall(cases.raw, size.iterations);
    samples.raw.push(raw);
    for (const name of ['id', 'encode', 'decode']) {
      const t = timePerCall(cases[name], size.iterations);
      samples[name].push(t);
      ratios[name].push(t / raw);
    }
  }
  const mbps = (ns) => (size.bytes / (1024 * 1024)) / (ns / 1e9);
  rows.push({
    size: size.label,
    raw: median(samples.raw),
    id: median(samples.id),
    encode: median(samples.encode),
    decode: median(samples.decode),
    idRatio: median(ratios.id),
    encodeRatio: median(ratios.encode),
    decodeRatio: median(ratios.decode),
    mbps,
  });
}

const fmt = (n, digits = 2) => n.toFixed(digits);
const out = [];
out.push('## AIP object IDs');
out.push('');
out.push(`Node ${process.version} on ${process.platform}/${process.arch}; median of ${ROUNDS} interleaved rounds; random content.`);
out.push('Ratios are time per object divided by raw `node:crypto` SHA-256 of the same content bytes, measured in the same round.');
out.push('');
out.push('| artifact | raw SHA-256 (MiB/s) | object ID (MiB/s) | ID ratio | encode + ID ratio | verified decode ratio |');
out.push('| --- | ---: | ---: | ---: | ---: | ---: |');
for (const r of rows) {
  out.push(`| ${r.size} | ${fmt(r.mbps(r.raw), 0)} | ${fmt(r.mbps(r.id), 0)} | ${fmt(r.idRatio)}x | ${fmt(r.encodeRatio)}x | ${fmt(r.decodeRatio)}x |`);
}
const big = rows.find((r) => r.size === '1 MiB');
out.push('');
out.push(`Target: object ID within ${TARGET_RATIO}x of raw SHA-256 for 1 MiB artifacts: ${big && big.idRatio <= TARGET_RATIO ? 'met' : 'NOT met'} (${fmt(big?.idRatio ?? Number.NaN)}x).`);
out.push('"object ID" hashes the fixed envelope prefix, the byte-string header, the content and the fixed suffix in one stream (no copy);');
out.push('"encode + ID" builds the full canonical encoding with cborg first; "verified decode" is the strict reader plus the hash, as on every store read.');
process.stdout.write(`${out.join('\n')}\n`);
