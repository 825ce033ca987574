#!/usr/bin/env node
// The `aigpt` executable: binds the command tree to the real process (argv,
// env, stdio). Sets process.exitCode and never calls process.exit, so pending
// output is flushed. All behaviour lives in program.ts.

import { faultHookFromEnv } from '../app.js';
import { processEnvironment } from '../config.js';
import { runCli } from './program.js';

const fault = faultHookFromEnv(process.env);
process.exitCode = await runCli(process.argv.slice(2), {
  environment: processEnvironment(),
  io: {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
  },
  ...(fault === undefined ? {} : { fault }),
});
