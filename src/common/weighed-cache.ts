/**
 * A map that keeps its most recently used entries within a count and a total
 * weight (the caller's unit, such as characters of text). A bound on the count
 * alone let a few large entries (a manifest near its megabyte bound, a store
 * signature of thousands of columns) hold hundreds of MB in a long-lived
 * server.
 */
export class WeighedCache<K, V> {
  private readonly entries = new Map<K, { readonly value: V; readonly weight: number }>();
  private total = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly maxWeight: number,
  ) {}

  /** The value under `key`, now the most recently used; undefined when not kept. */
  get(key: K): V | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.value;
  }

  /** Keeps `value` (unless it alone outweighs the bound), letting go of the least recently used beyond the bounds. */
  set(key: K, value: V, weight: number): void {
    this.delete(key);
    if (weight > this.maxWeight) return;
    this.entries.set(key, { value, weight });
    this.total += weight;
    for (const [oldest, entry] of this.entries) {
      if (this.entries.size <= this.maxEntries && this.total <= this.maxWeight) break;
      this.entries.delete(oldest);
      this.total -= entry.weight;
    }
  }

  delete(key: K): void {
    const entry = this.entries.get(key);
    if (entry === undefined) return;
    this.entries.delete(key);
    this.total -= entry.weight;
  }

  get size(): number {
    return this.entries.size;
  }

  /** The total weight of the entries kept. */
  get weight(): number {
    return this.total;
  }
}
