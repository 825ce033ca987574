// What the AIPCS benchmarks share: the six server-managed attributes every
// entity declares (the tests' own list), and the statistics helpers. Not a benchmark itself
// (bench/run.mjs runs only *.bench.mjs).

const { serverManaged: serverManagedAttributes } = await import(new URL('../dist/test/support/manifests.js', import.meta.url).href);

/** The tests' list, compiled for the benchmarks by tsconfig.bench.json. */
export const serverManaged = serverManagedAttributes();

/** The p-quantile (0..1) of a list of numbers, by nearest rank below. */
export const percentile = (values, p) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((values.length - 1) * p))];

/** Nanoseconds (bigint, from process.hrtime.bigint) to milliseconds. */
export const ms = (ns) => Number(ns) / 1e6;
