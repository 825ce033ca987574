// A running SHA-256 over the UTF-8 bytes of many short texts. Each text is
// encoded straight into one reused buffer that is hashed when full: joining
// the texts into long strings first and hashing those cost about four times
// as much (the joined string is flattened, then converted again), and a
// hash update per text more still.

import { createHash, type Hash } from 'node:crypto';

const BUFFER_BYTES = 1024 * 1024;
/** The most UTF-8 bytes one UTF-16 code unit can take. */
const MAX_BYTES_PER_UNIT = 3;

export class Utf8Sha256 {
  private readonly hash: Hash = createHash('sha256');
  private readonly buffer = Buffer.allocUnsafe(BUFFER_BYTES);
  private used = 0;

  update(text: string): void {
    const room = text.length * MAX_BYTES_PER_UNIT;
    if (this.used + room > BUFFER_BYTES) {
      this.flush();
      if (room > BUFFER_BYTES) {
        this.hash.update(text, 'utf8');
        return;
      }
    }
    this.used += this.buffer.write(text, this.used, 'utf8');
  }

  digest(): string {
    this.flush();
    return this.hash.digest('hex');
  }

  private flush(): void {
    if (this.used > 0) this.hash.update(this.buffer.subarray(0, this.used));
    this.used = 0;
  }
}
