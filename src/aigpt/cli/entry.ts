// The `aigpt` executable: binds the command tree to the real process (argv,
// env, stdio). Sets process.exitCode and never calls process.exit, so pending
// output is flushed. All behaviour lives in program.ts.

import { endIfStdoutAbandoned } from '../../common/mcp/abandoned-stdout.js';
import { firstNonUtf8Argument } from '../../common/raw-arguments.js';
import { faultHookFromEnv } from '../app.js';
import { processEnvironment } from '../config/config.js';
import { errnoCode } from '../core/errors.js';
import { runCli } from './program.js';

let outputFailed = false;

/**
 * Writes to a standard stream until it breaks. A reader that went away
 * (EPIPE: `aigpt read-memory | head -1`) ends the output, not the command:
 * the work finishes (setup must not stop half-way) and the process exits
 * quietly. Any other error writing stdout is named once and makes the exit
 * code 1; one writing stderr is not (see the error handler).
 */
interface Writer {
  readonly write: (text: string) => void;
  /**
   * Resolves once the stream has taken what was written (at once unless it
   * is behind). A pipe on Node queues every write in memory: without waiting,
   * `aigpt read-memory | less` on a big folder queued gigabytes and failed
   * with ENOBUFS.
   */
  readonly drained: () => Promise<void>;
  /** True once the stream broke: what is written after is dropped. */
  readonly broken: () => boolean;
}

function writerTo(stream: NodeJS.WriteStream, name: string): Writer {
  let broken = false;
  stream.on('error', (error) => {
    if (broken) return;
    broken = true;
    const code = errnoCode(error);
    // Diagnostics that cannot be written change nothing the command did:
    // a save whose over-limit warning met a full stderr still saved (exit
    // 1 would make a script save it again), a usage error stays 2.
    if (code === 'EPIPE' || stream === process.stderr) return;
    outputFailed = true;
    process.exitCode = 1;
    writeStderr(`aigpt: cannot write to ${name}: ${code ?? 'unknown error'}\n`);
  });
  return {
    write: (text) => {
      if (!broken) stream.write(text);
    },
    broken: () => broken,
    drained: () =>
      broken || !stream.writableNeedDrain
        ? Promise.resolve()
        : new Promise((resolve) => {
            const done = (): void => {
              for (const event of ['drain', 'error', 'close']) stream.off(event, done);
              resolve();
            };
            for (const event of ['drain', 'error', 'close']) stream.once(event, done);
          }),
  };
}

const stderr = writerTo(process.stderr, 'stderr');
const stdout = writerTo(process.stdout, 'stdout');
const writeStderr = stderr.write;

const fault = faultHookFromEnv(process.env);
const argv = process.argv.slice(2);
let exitCode: number;
// `aigpt save-memory $'\xff'` would store a text nobody typed: an argument
// that is not UTF-8 is a usage error, as in the reference (clap, String arguments).
const nonUtf8Argument = firstNonUtf8Argument(argv);
if (nonUtf8Argument !== undefined) {
  // Which one, 1-based as aip counts it, so the user knows what to retype.
  writeStderr(`error: argument ${nonUtf8Argument} is not valid UTF-8\n(run aigpt --help for usage)\n`);
  exitCode = 2;
} else {
  exitCode = await runCli(argv, {
    environment: processEnvironment(),
    io: { stdout: stdout.write, stderr: writeStderr, stdoutDrained: stdout.drained, stdoutBroken: stdout.broken },
    ...(fault === undefined ? {} : { fault }),
  });
}
process.exitCode = outputFailed ? 1 : exitCode;
// `aigpt server` gave up on answers its client never read: their pending
// writes on stdout would keep the process alive for good.
endIfStdoutAbandoned(process.exitCode);
