// Progress of export and import for an operator watching a terminal
// (`--format human` only; machine mode keeps stderr for the failure
// envelope). Lines go to stderr at most once per interval, plus one when a
// phase ends, so a long transfer shows it is alive without flooding a log.

import { performance } from 'node:perf_hooks';

export interface ProgressOptions {
  /** `aipcs export` or `aipcs import`: the prefix of every line. */
  readonly label: string;
  /** Where lines go (stderr in the CLI). */
  readonly write: (line: string) => void;
  /** Bytes the phase will read, when known: lines then show a percentage. */
  readonly totalBytes?: number | null;
  readonly intervalMs?: number;
  /** Milliseconds on a monotonic clock (a wall-clock step must not skew intervals or durations). */
  readonly now?: () => number;
}

const MB = 1e6;

function megabytes(bytes: number): string {
  return (bytes / MB).toFixed(1);
}

export class TransferProgress {
  private readonly intervalMs: number;
  private readonly now: () => number;
  private phase: string | null = null;
  private bytes = 0;
  private phaseStarted = 0;
  private lastLine = 0;

  constructor(private readonly options: ProgressOptions) {
    this.intervalMs = options.intervalMs ?? 1000;
    this.now = options.now ?? (() => performance.now());
  }

  /** Starts a phase (`validating`, `staging`, `writing`); the previous one is reported done. */
  begin(phase: string): void {
    this.end();
    this.phase = phase;
    this.bytes = 0;
    this.phaseStarted = this.now();
    this.lastLine = this.phaseStarted;
  }

  /** Counts bytes of the current phase; prints when the interval has passed. */
  add(bytes: number): void {
    if (this.phase === null) return;
    this.bytes += bytes;
    const now = this.now();
    if (now - this.lastLine >= this.intervalMs) {
      this.lastLine = now;
      this.print(`${this.phase} ${this.amount()}`);
    }
  }

  /** Reports the current phase done (with its size and duration); idempotent. */
  end(): void {
    if (this.phase === null) return;
    const seconds = (this.now() - this.phaseStarted) / 1000;
    this.print(`${this.phase} done: ${megabytes(this.bytes)} MB in ${seconds.toFixed(1)} s`);
    this.phase = null;
  }

  private amount(): string {
    const total = this.options.totalBytes;
    if (total === null || total === undefined || total <= 0) return `${megabytes(this.bytes)} MB`;
    const percent = Math.min(100, Math.floor((100 * this.bytes) / total));
    return `${percent}% (${megabytes(this.bytes)} of ${megabytes(total)} MB)`;
  }

  private print(text: string): void {
    this.options.write(`${this.options.label}: ${text}\n`);
  }
}
