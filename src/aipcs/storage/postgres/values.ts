// How PostgreSQL domain columns store a record's field values; shared by the
// data units and import staging. No SQL here.

import type { FieldValue } from '../../core/ports.js';

export function encodeValue(type: string, value: FieldValue): unknown {
  if (value === null) return null;
  // jsonb keeps every member string exactly; the driver would send a JS array as a PostgreSQL array.
  if (type === 'string_list') return JSON.stringify(value);
  return value;
}
