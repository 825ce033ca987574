// AIPCS discovery on SQLite: aipcs_bootstrap over 100 services and
// aipcs_service_summary of a service holding 100k records, measured in
// process through the application layer. Reports time and the size of the
// rendered response, since the response is what an agent pays for in context.
// Baseline: a bare `SELECT count(*)` over the same entity in the same run.

import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ms, percentile, serverManaged } from './fixtures.mjs';
import Database from 'better-sqlite3';

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, '..', 'dist', 'src');
const { openSqliteStorage } = await import(join(dist, 'aipcs/storage/sqlite/index.js'));
const { createApplication } = await import(join(dist, 'aipcs/core/application.js'));
const { validateManifest } = await import(join(dist, 'aipcs/contract/manifest/validate-manifest.js'));
const { successEnvelope, renderEnvelopeText } = await import(join(dist, 'aipcs/contract/envelope.js'));
const { parseJson } = await import(join(dist, 'common/json.js'));

const scale = Number(process.env.AIPCS_BENCH_SCALE ?? '1');
const records = Math.max(1000, Math.round(100_000 * scale));

const manifestDocument = {
  manifest_version: 2,
  schema_version: 1,
  entities: [
    {
      name: 'note',
      attributes: [
        ...serverManaged,
        { name: 'title', type: 'string', required: true },
        { name: 'status', type: 'string' },
        { name: 'confidence', type: 'number' },
        { name: 'source_ref', type: 'string' },
        { name: 'tags', type: 'string_list', retrieval_mode: 'membership' },
      ],
    },
  ],
  discovery_facets: [
    { entity: 'note', field: 'status' },
    { entity: 'note', field: 'tags' },
  ],
  query_patterns: ['notes by status', 'notes by tag'],
  retrieval_guidance: 'Search by status or tag.',
};
const manifest = validateManifest(parseJson(JSON.stringify(manifestDocument), { maxBytes: 1 << 20, maxDepth: 64 })).manifest;

const fmt = (value, digits = 3) => value.toFixed(digits);
const bytes = (result) => Buffer.byteLength(renderEnvelopeText(successEnvelope(result)), 'utf8');

const base = mkdtempSync(join(tmpdir(), 'aipcs-bench-'));
const storage = await openSqliteStorage({ dataRoot: join(base, 'data'), busyTimeoutMs: 5000, defaultRoot: false });
let now = 1_800_000_000_000_000n;
const app = createApplication(storage, {
  principalId: 'bench',
  createdVia: 'mcp',
  nowMicros: () => (now += 1n),
  uuid: () => randomUUID(),
  sha256: (text) => createHash('sha256').update(text).digest('hex'),
});

// 100 services with intents of about 100 characters (what an agent
// typically writes; the contract allows 1000), 10 of them materialised.
let big;
for (let i = 0; i < 100; i++) {
  const seeded = await app.lifecycle.seed({
    domainName: `service_${String(i).padStart(3, '0')}`,
    domainClass: 'knowledge',
    intentDescription: `Memory domain ${String(i).padStart(3, '0')}: decisions, facts and follow-ups the agent keeps for this project.`.slice(0, 100),
    idempotencyKey: `seed-${i}`,
  });
  if (i % 10 === 0) {
    await app.lifecycle.design({ serviceId: seeded.service_id, manifest, idempotencyKey: `design-${i}` });
    await app.lifecycle.materialise({ serviceId: seeded.service_id, expectedServiceRevision: 2n, expectedSchemaVersion: 1n, idempotencyKey: `mat-${i}` });
    big ??= seeded.service_id;
  }
}

// Load the first materialised service directly through the data port, in large transactions.
const admission = await app.lifecycle.admitData(big);
const layout = admission.layout.entities.find((entity) => entity.name === 'note');
for (let start = 0; start < records; start += 20_000) {
  await storage.data.write(admission.service.storage, 'bench', async (tx) => {
    for (let i = start; i < Math.min(records, start + 20_000); i++) {
      now += 1n;
      await tx.insertRecord(layout, {
        id: randomUUID(),
        createdAt: now,
        updatedAt: now,
        createdVia: 'mcp',
        recordVersion: 1n,
        fields: { title: `note ${i}`, status: `s${i % 40}`, confidence: (i % 100) / 100, source_ref: `ref-${i % 5000}`, tags: [`t${i % 300}`, `u${i % 7}`] },
      });
    }
  });
}
for (let i = 0; i < 20; i++) {
  await app.branches.create({ serviceId: big, slug: `branch-${i}`, title: `Branch ${i}`, intent: 'A topic.', branchType: null, parentBranchId: null, retrievalSummary: null, idempotencyKey: `branch-${i}` });
}

const time = async (runs, work) => {
  const samples = [];
  let result;
  for (let i = 0; i < runs; i++) {
    const started = process.hrtime.bigint();
    result = await work();
    samples.push(ms(process.hrtime.bigint() - started));
  }
  return { p50: percentile(samples, 0.5), p95: percentile(samples, 0.95), result };
};

const bootstrap = await time(50, () => app.discovery.bootstrap({ limit: 100 }));
const summary = await time(20, () => app.discovery.summary({ serviceId: big, sample: 3 }));

await storage.close();
const bare = new Database(join(base, 'data', 'service-stores', `${admission.service.storage.namespace}.sqlite`), { readonly: true });
const count = bare.prepare('SELECT count(*) AS n FROM note');
const baseline = await time(20, () => count.get());
bare.close();
rmSync(base, { recursive: true, force: true });

const lines = [
  '## AIPCS discovery on SQLite',
  '',
  `In process through the application layer; response size is the rendered envelope text an agent receives.`,
  '',
  '| call | p50 ms | p95 ms | response bytes | target |',
  '| --- | ---: | ---: | ---: | --- |',
  `| aipcs_bootstrap, 100 services | ${fmt(bootstrap.p50)} | ${fmt(bootstrap.p95)} | ${bytes(bootstrap.result)} | < 32768 bytes |`,
  `| aipcs_service_summary, ${records} records, 2 facets, 20 branches, 3 samples | ${fmt(summary.p50)} | ${fmt(summary.p95)} | ${bytes(summary.result)} | < 50 ms |`,
  `| baseline: bare SELECT count(*) over the same ${records} rows | ${fmt(baseline.p50)} | ${fmt(baseline.p95)} | | |`,
  '',
  `Summary p50 is ${fmt(summary.p50 / baseline.p50, 1)}x one bare count of the entity.`,
  `Bootstrap cost per service card beyond its intent text: ${Math.round((bytes(bootstrap.result) - 100 * 100) / 100)} bytes; intents are the agent's own text (up to 1000 characters each).`,
  '',
];
process.stdout.write(lines.join('\n') + '\n');
