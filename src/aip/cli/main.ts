#!/usr/bin/env node
// Entry point of the `aip` command: wires the real process streams, clock and
// signals into runCli and sets the exit code. Everything else is in program.ts.
import { tolerateClosedPipe } from './closed-pipe.js';
import { runCli } from './program.js';

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

process.exitCode = await runCli(process.argv.slice(2), {
  stdout: tolerateClosedPipe(process.stdout),
  stderr: tolerateClosedPipe(process.stderr),
  stdin: process.stdin,
  cwd: process.cwd(),
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
