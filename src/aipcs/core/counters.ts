// The 64-bit counters the core advances by one (service_revision,
// record_version, branch_revision, a store's write-fence generation) end at
// 2^63-1 (contract §10 bounds, ops spec §3.2.6). A change that would move one
// past it is refused before anything is admitted or written (D40).

export const COUNTER_MAX = 2n ** 63n - 1n;

/** Whether `value` can still move on by one. */
export function canAdvance(value: bigint): boolean {
  return value < COUNTER_MAX;
}
