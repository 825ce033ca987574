// A first session with AIPCS, as an agent host would run it: start
// `aipcs serve --profile sqlite` over stdio, then seed a service, design it
// with examples/quickstart-manifest.json, materialise it, create a record,
// search for it, update it and read its history. Run: node examples/quickstart.mjs [DATA_ROOT]
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const here = dirname(fileURLToPath(import.meta.url));
const dataRoot = resolve(process.argv[2] ?? join(process.cwd(), '.aipcs-quickstart'));
const manifest = JSON.parse(readFileSync(join(here, 'quickstart-manifest.json'), 'utf8'));

const client = new Client({ name: 'quickstart', version: '1.0.0' });
const transport = new StdioClientTransport({
  command: process.execPath,
  args: [join(here, '..', 'dist', 'src', 'aipcs', 'cli', 'main.js'), 'serve', '--profile', 'sqlite', '--principal-id', 'local-agent', '--sqlite-data-root', dataRoot],
  stderr: 'pipe',
});
// The server says on stderr why it would not start (an unsafe data root, for
// example); keep it to show instead of the client's "Connection closed".
let serverStderr = '';
transport.stderr?.on('data', (chunk) => (serverStderr += chunk));
try {
  await client.connect(transport);
} catch {
  process.stderr.write(
    `The AIPCS server did not start with the data root ${dataRoot}. It said:\n${serverStderr || '(nothing)\n'}` +
      'A data root, and the folder it is in, must be yours and not writable by group or others (docs/configuration.md); name another one as the argument.\n',
  );
  process.exit(1);
}

async function call(name, args) {
  const result = await client.callTool({ name, arguments: args });
  const envelope = JSON.parse(result.content[0].text);
  process.stdout.write(`${name}: ${envelope.ok ? 'ok' : `${envelope.error.code} (${envelope.error.message})`}\n`);
  if (!envelope.ok) throw new Error(`${name} failed`);
  return envelope.result;
}

const service = await call('aipcs_service_seed', { domain_name: 'notes', domain_class: 'knowledge', intent_description: 'Decisions and facts about my projects.', idempotency_key: 'quickstart-seed' });
const designed = await call('aipcs_service_design', { service_id: service.service_id, schema: manifest, idempotency_key: 'quickstart-design' });
const materialised = await call('aipcs_service_materialise', {
  service_id: service.service_id,
  expected_service_revision: designed.service_revision,
  expected_schema_version: designed.schema_version,
  idempotency_key: 'quickstart-materialise',
});
process.stdout.write(`  service ${materialised.service_id} is ${materialised.design_state} at revision ${materialised.service_revision}\n`);

const created = await call('aipcs_record_create', {
  service_id: service.service_id,
  entity_name: 'note',
  record: { title: 'Ship the release on Friday', status: 'draft', confidence: 0.8, tags: ['release'] },
  idempotency_key: 'quickstart-note-1',
});
const found = await call('aipcs_record_search', { service_id: service.service_id, entity_name: 'note', filters: { tags: 'release' } });
process.stdout.write(`  search found ${found.records.length} note(s): ${found.records.map((note) => note.fields.title).join(', ')}\n`);
await call('aipcs_record_update', {
  service_id: service.service_id,
  entity_name: 'note',
  record_id: created.record.id,
  updates: { status: 'complete' },
  expected_record_version: created.record.record_version,
  idempotency_key: 'quickstart-note-1-complete',
});
const history = await call('aipcs_record_history', { service_id: service.service_id, entity_name: 'note', record_id: created.record.id });
process.stdout.write(`  history: ${history.events.map((event) => `${event.kind}@v${event.record_version}`).join(' -> ')}\n`);
await client.close();
