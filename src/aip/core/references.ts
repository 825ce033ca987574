// Every reference an object holds (spec 1 and 5.2): target ID, the top-level
// field holding it, the full field path and the type it must resolve to.
// Pure; used by graph verification, the reverse index and bundle ordering.
import type { AipObject, Id, ObjectType } from './objects.js';
import { quotedPath } from './quote.js';

export interface Reference {
  readonly target: Id;
  /** Top-level data field (the reverse index's `{field}`). */
  readonly field: string;
  /** Full field path for messages, e.g. `data.effects[1].after.artifact`. */
  readonly at: string;
  /** Expected type, or undefined when any stored object is allowed. */
  readonly expect: ObjectType | undefined;
}

function list(out: Reference[], ids: readonly Id[], field: string, expect: ObjectType | undefined): void {
  ids.forEach((target, i) => out.push({ target, field, at: `data.${field}[${i}]`, expect }));
}

export function referencesOf(object: AipObject): Reference[] {
  const out: Reference[] = [];
  switch (object.type) {
    case 'artifact':
      break;
    case 'intent':
      list(out, object.data.context, 'context', undefined);
      list(out, object.data.parents, 'parents', 'intent');
      break;
    case 'operation': {
      const d = object.data;
      list(out, d.inputs, 'inputs', 'artifact');
      out.push({ target: d.intent, field: 'intent', at: 'data.intent', expect: 'intent' });
      d.effects.forEach((effect, i) => {
        if (effect.after) out.push({ target: effect.after.artifact, field: 'effects', at: `data.effects[${i}].after.artifact`, expect: 'artifact' });
        if (effect.before) out.push({ target: effect.before.artifact, field: 'effects', at: `data.effects[${i}].before.artifact`, expect: 'artifact' });
      });
      out.push({ target: d.base_state, field: 'base_state', at: 'data.base_state', expect: 'state' });
      break;
    }
    case 'state': {
      const d = object.data;
      for (const [path, entry] of d.files) {
        out.push({ target: entry.artifact, field: 'files', at: `data.files[${quotedPath(path)}].artifact`, expect: 'artifact' });
      }
      list(out, d.intents, 'intents', 'intent');
      list(out, d.parents, 'parents', 'state');
      list(out, d.operations, 'operations', 'operation');
      break;
    }
    case 'evidence':
      out.push({ target: object.data.state, field: 'state', at: 'data.state', expect: 'state' });
      if (object.version === 2) {
        out.push({ target: object.data.stderr.artifact, field: 'stderr', at: 'data.stderr.artifact', expect: 'artifact' });
        out.push({ target: object.data.stdout.artifact, field: 'stdout', at: 'data.stdout.artifact', expect: 'artifact' });
      }
      list(out, object.data.operations, 'operations', 'operation');
      break;
    case 'decision':
      list(out, object.data.related, 'related', undefined);
      break;
  }
  return out;
}

/** Distinct (target, field) pairs: what the reverse index records for an object. */
export function indexEntriesOf(object: AipObject): { target: Id; field: string }[] {
  const seen = new Set<string>();
  const out: { target: Id; field: string }[] = [];
  for (const ref of referencesOf(object)) {
    const key = `${ref.target} ${ref.field}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ target: ref.target, field: ref.field });
  }
  return out;
}
