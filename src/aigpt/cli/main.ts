#!/usr/bin/env node
// The `aigpt` executable: binds the command tree to the real process (argv,
// env, stdio). Sets process.exitCode and never calls process.exit, so pending
// output is flushed. All behaviour lives in program.ts.

import { faultHookFromEnv } from '../app.js';
import { processEnvironment } from '../config.js';
import { errnoCode } from '../errors.js';
import { runCli } from './program.js';

let outputFailed = false;

/**
 * Writes to a standard stream until it breaks. A reader that went away
 * (EPIPE: `aigpt read-memory | head -1`) ends the output, not the command:
 * the work finishes (setup must not stop half-way) and the process exits
 * quietly. Any other write error is named once and makes the exit code 1.
 */
function writerTo(stream: NodeJS.WriteStream, name: string): (text: string) => void {
  let broken = false;
  stream.on('error', (error) => {
    if (broken) return;
    broken = true;
    const code = errnoCode(error);
    if (code === 'EPIPE') return;
    outputFailed = true;
    process.exitCode = 1;
    if (stream !== process.stderr) writeStderr(`aigpt: cannot write to ${name}: ${code ?? 'unknown error'}\n`);
  });
  return (text) => {
    if (!broken) stream.write(text);
  };
}

const writeStderr = writerTo(process.stderr, 'stderr');
const writeStdout = writerTo(process.stdout, 'stdout');

const fault = faultHookFromEnv(process.env);
const exitCode = await runCli(process.argv.slice(2), {
  environment: processEnvironment(),
  io: { stdout: writeStdout, stderr: writeStderr },
  ...(fault === undefined ? {} : { fault }),
});
process.exitCode = outputFailed ? 1 : exitCode;
