// An in-memory ObjectSource for graph tests: objects are stored under the ID
// their encoding hashes to, or under any ID a test chooses (to build cycles
// that content addressing would otherwise make impossible).
import { mustEncode } from '../../../src/aip/core/codec.js';
import type { AipObject, Id } from '../../../src/aip/core/objects.js';
import type { LoadResult, ObjectSource } from '../../../src/aip/core/verify-graph.js';

export class MemorySource implements ObjectSource {
  readonly objects = new Map<Id, AipObject>();

  add(object: AipObject): Id {
    const { id } = mustEncode(object);
    this.objects.set(id, object);
    return id;
  }

  addAs(id: Id, object: AipObject): Id {
    this.objects.set(id, object);
    return id;
  }

  async load(id: Id): Promise<LoadResult> {
    const object = this.objects.get(id);
    return object === undefined ? { kind: 'missing' } : { kind: 'found', object };
  }
}
