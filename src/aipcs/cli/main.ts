#!/usr/bin/env node
// Entry point of the `aipcs` command: builds the command tree and runs it.
// Exit status is set through process.exitCode so output drains first.

import { runAipcsCli } from './program.js';

await runAipcsCli(process.argv.slice(2));
