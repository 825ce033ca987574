// A `number` field given -0.0 (or the integer token -0) reads back the same
// everywhere: the create and update answers, a replay, get, list, search and
// the history snapshots all say 0.0, on every backend. SQLite's REAL column
// keeps an integral double as an integer and so loses the sign: before,
// create, replay and history said -0.0 while get and list said 0.0 (the last
// history snapshot then differed from the current record), and PostgreSQL,
// which keeps the sign, answered get differently from SQLite.
// docs/decisions-aipcs-contract.md, "Numbers at the edge".

import { describe, expect, it } from 'vitest';
import { serverProfiles } from '../../support/aipcs-client.js';
import { serverManaged } from '../../support/manifests.js';
import { rawLineSession } from '../../support/raw-stdio.js';

interface Envelope {
  ok: boolean;
  result: Record<string, unknown> | null;
}

const manifest = {
  manifest_version: 2,
  schema_version: 1,
  entities: [{ name: 'm', attributes: [...serverManaged().map((a) => ({ ...a })), { name: 'x', type: 'number' }, { name: 'y', type: 'number' }] }],
};

/** The text of every number field `x` or `y` in an answer line, as written. */
const numbersIn = (text: string): string[] => [...text.matchAll(/"[xy]":(-?[0-9.e+-]+)/g)].map((match) => match[1] ?? '');

for (const profile of await serverProfiles()) {
  describe(`negative zero in number fields (${profile.name})`, () => {
    it('answers 0.0 for -0.0 and -0 in every read, write answer and history snapshot', async () => {
      const storage = await profile.fresh();
      const session = rawLineSession(['serve', ...storage.args], storage.env);
      try {
        await session.initialize();
        const call = async (name: string, args: string): Promise<{ text: string; envelope: Envelope }> => {
          const text = await session.toolText(name, args);
          return { text, envelope: JSON.parse(text) as Envelope };
        };
        const seeded = await call('aipcs_service_seed', '{"domain_name":"zeros","domain_class":"k","intent_description":"i","idempotency_key":"s"}');
        const sid = seeded.envelope.result?.['service_id'] as string;
        expect((await call('aipcs_service_design', JSON.stringify({ service_id: sid, schema: manifest, idempotency_key: 'd' }))).envelope.ok).toBe(true);
        expect((await call('aipcs_service_materialise', `{"service_id":"${sid}","expected_service_revision":2,"expected_schema_version":1,"idempotency_key":"m"}`)).envelope.ok).toBe(true);

        const createArgs = `{"service_id":"${sid}","entity_name":"m","record":{"x":-0.0,"y":-0},"idempotency_key":"c"}`;
        const created = await call('aipcs_record_create', createArgs);
        expect(created.envelope.ok).toBe(true);
        const id = (created.envelope.result?.['record'] as { id: string }).id;
        const replayed = await call('aipcs_record_create', createArgs);
        expect(replayed.envelope.result?.['replayed']).toBe(true);
        const updated = await call('aipcs_record_update', `{"service_id":"${sid}","entity_name":"m","record_id":"${id}","updates":{"x":-0.0},"expected_record_version":1,"idempotency_key":"u"}`);
        expect(updated.envelope.ok).toBe(true);
        const reads = [
          created.text,
          replayed.text,
          updated.text,
          (await call('aipcs_record_get', `{"service_id":"${sid}","entity_name":"m","record_id":"${id}"}`)).text,
          (await call('aipcs_record_list', `{"service_id":"${sid}","entity_name":"m"}`)).text,
          (await call('aipcs_record_search', `{"service_id":"${sid}","entity_name":"m","filters":{"x":0}}`)).text,
          (await call('aipcs_record_history', `{"service_id":"${sid}","entity_name":"m","record_id":"${id}"}`)).text,
        ];
        for (const text of reads) {
          const numbers = numbersIn(text);
          expect(numbers.length, text).toBeGreaterThan(0);
          expect(new Set(numbers), text).toEqual(new Set(['0.0']));
        }
      } finally {
        session.close();
        await storage.drop();
      }
    });
  });
}
