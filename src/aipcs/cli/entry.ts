// Entry point of the `aipcs` command: builds the command tree and runs it.
// Exit status is set through process.exitCode so output drains first.

import { surrogateEscapedArguments } from '../../common/raw-arguments.js';
import { runAipcsCli } from './program.js';

// Arguments that are not UTF-8 are read as the reference's Python reads them
// (surrogateescape), so a principal id or data root holding such bytes is
// refused as unprintable rather than taken with U+FFFD in their place.
await runAipcsCli(surrogateEscapedArguments(process.argv.slice(2)));
