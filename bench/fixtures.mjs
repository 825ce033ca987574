// What the AIPCS benchmarks share: the six server-managed attributes every
// entity declares, and the statistics helpers. Not a benchmark itself
// (bench/run.mjs runs only *.bench.mjs).

export const serverManaged = [
  { name: 'id', type: 'uuid', required: true, primary_key: true },
  { name: 'owner_id', type: 'string', required: true },
  { name: 'created_at', type: 'datetime', required: true },
  { name: 'updated_at', type: 'datetime', required: true },
  { name: 'created_via', type: 'string', required: true },
  { name: 'record_version', type: 'integer', required: true },
];

/** The p-quantile (0..1) of a list of numbers, by nearest rank below. */
export const percentile = (values, p) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((values.length - 1) * p))];

/** Nanoseconds (bigint, from process.hrtime.bigint) to milliseconds. */
export const ms = (ns) => Number(ns) / 1e6;
