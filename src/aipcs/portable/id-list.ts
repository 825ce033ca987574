// A compact, append-only list of 128-bit keys (four 32-bit words: canonical
// UUIDs, or the leading bits of digests) in typed arrays: searched by
// bisection when appended in ascending order, or checked for a key present
// twice. It lets the reader remember up to a million ids in 16 bytes each
// instead of a Set of strings; nothing else is stored per id.

/** The four big-endian 32-bit words of a canonical (lowercase, hyphenated) UUID. */
export function uuidWords(id: string): [number, number, number, number] {
  return [
    parseInt(id.slice(0, 8), 16),
    parseInt(id.slice(9, 13) + id.slice(14, 18), 16),
    parseInt(id.slice(19, 23) + id.slice(24, 28), 16),
    parseInt(id.slice(28, 36), 16),
  ];
}

export class IdList {
  private words = new Uint32Array(64);
  private size = 0;

  get length(): number {
    return this.size;
  }

  /** Appends an id and returns its index; search needs the ids appended in ascending order. */
  push(id: string): number {
    return this.pushKey(uuidWords(id));
  }

  /** Appends a 128-bit key and returns its index. */
  pushKey(key: readonly number[]): number {
    if ((this.size + 1) * 4 > this.words.length) {
      const grown = new Uint32Array(this.words.length * 2);
      grown.set(this.words);
      this.words = grown;
    }
    this.words.set(key.slice(0, 4), this.size * 4);
    return this.size++;
  }

  /** Index of the id, or -1 (the list must have been filled in ascending order). */
  indexOf(id: string): number {
    return this.indexOfKey(uuidWords(id));
  }

  /** The 128-bit key stored at an index. */
  keyAt(index: number): [number, number, number, number] {
    const base = index * 4;
    return [this.words[base] as number, this.words[base + 1] as number, this.words[base + 2] as number, this.words[base + 3] as number];
  }

  indexOfKey(key: readonly number[]): number {
    let low = 0;
    let high = this.size - 1;
    while (low <= high) {
      const mid = (low + high) >>> 1;
      const order = this.compareAt(mid, key);
      if (order === 0) return mid;
      if (order < 0) low = mid + 1;
      else high = mid - 1;
    }
    return -1;
  }

  /** Whether some key occurs twice, in any order of appending (sorts an index permutation; the keys stay as appended). */
  hasDuplicate(): boolean {
    const order = new Int32Array(this.size);
    for (let i = 0; i < this.size; i++) order[i] = i;
    const words = this.words;
    const compare = (a: number, b: number): number => {
      for (let i = 0; i < 4; i++) {
        const x = words[a * 4 + i] as number;
        const y = words[b * 4 + i] as number;
        if (x !== y) return x < y ? -1 : 1;
      }
      return 0;
    };
    order.sort(compare);
    for (let i = 1; i < this.size; i++) if (compare(order[i - 1] as number, order[i] as number) === 0) return true;
    return false;
  }

  private compareAt(index: number, key: readonly number[]): number {
    const base = index * 4;
    for (let i = 0; i < 4; i++) {
      const a = this.words[base + i] as number;
      const b = key[i] as number;
      if (a !== b) return a < b ? -1 : 1;
    }
    return 0;
  }
}

/** A growable bit set over indexes of an IdList. */
export class BitSet {
  private bits = new Uint8Array(64);

  has(index: number): boolean {
    const byte = index >>> 3;
    return byte < this.bits.length && ((this.bits[byte] as number) & (1 << (index & 7))) !== 0;
  }

  /** Sets the bit and reports whether it was already set. */
  testAndSet(index: number): boolean {
    const byte = index >>> 3;
    if (byte >= this.bits.length) {
      const grown = new Uint8Array(Math.max(this.bits.length * 2, byte + 1));
      grown.set(this.bits);
      this.bits = grown;
    }
    const mask = 1 << (index & 7);
    const was = ((this.bits[byte] as number) & mask) !== 0;
    this.bits[byte] = (this.bits[byte] as number) | mask;
    return was;
  }
}

/** The first 128 bits of a hex digest as four words. */
export function digestWords(hex: string): [number, number, number, number] {
  return [parseInt(hex.slice(0, 8), 16), parseInt(hex.slice(8, 16), 16), parseInt(hex.slice(16, 24), 16), parseInt(hex.slice(24, 32), 16)];
}
