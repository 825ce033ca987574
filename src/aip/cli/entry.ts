// Entry point of the `aip` command: wires the real process streams, clock and
// signals into runCli and sets the exit code. Everything else is in program.ts.
import { tolerateClosedPipe } from './closed-pipe.js';
import { currentFolder } from './current-folder.js';
import { runCli } from './program.js';
import { firstNonUtf8Argument } from '../../common/raw-arguments.js';
import { standardInput } from '../../common/standard-input.js';

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

const args = process.argv.slice(2);
const nonUtf8Argument = firstNonUtf8Argument(args);

process.exitCode = await runCli(args, {
  ...(nonUtf8Argument === undefined ? {} : { nonUtf8Argument }),
  stdout: tolerateClosedPipe(process.stdout, 'stdout'),
  stderr: tolerateClosedPipe(process.stderr, 'stderr'),
  stdin: standardInput(),
  cwd: currentFolder,
  now: () => Date.now(),
  onSignal: (handler) => {
    const listeners = SIGNALS.map((signal) => {
      const listener = (): void => handler(signal);
      process.on(signal, listener);
      return [signal, listener] as const;
    });
    return () => {
      for (const [signal, listener] of listeners) process.off(signal, listener);
    };
  },
});
