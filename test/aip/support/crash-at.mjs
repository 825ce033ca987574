// Preload for crash tests (`node --import crash-at.mjs aip ...`): with
// AIP_TEST_CRASH_AT=NAME:N, the process kills itself with SIGKILL on the Nth
// call of fs/promises' NAME (before it runs), as a power loss or `kill -9`
// would stop aip there. AIP_TEST_CRASH_SIGNAL names another signal to send
// instead (SIGINT, SIGTERM: a Ctrl-C or a polite kill at that point).
// AIP_TEST_CRASH_OVERWRITE (JSON {"path","text"}) writes that file just
// before (another process taking a file over at that moment).
// AIP_TEST_CRASH_MATCH=TEXT counts only the calls whose first argument
// contains TEXT; AIP_TEST_CRASH_WHEN=after sends the signal once the call has
// completed instead (a Ctrl-C the moment a file exists, before the code that
// awaited it resumes: the call's result is handed over only after a short
// timer, so the signal is handled first, as when it lands between the
// operation's completion and its callback).
import { writeFileSync } from 'node:fs';
import { hookNthFsCall } from './hook-fs-call.mjs';

const after = process.env.AIP_TEST_CRASH_WHEN === 'after';
const crash = () => process.kill(process.pid, process.env.AIP_TEST_CRASH_SIGNAL || 'SIGKILL');
hookNthFsCall(process.env.AIP_TEST_CRASH_AT ?? '', process.env.AIP_TEST_CRASH_MATCH ?? '', (_args, proceed) => {
  if (process.env.AIP_TEST_CRASH_OVERWRITE) {
    const { path, text } = JSON.parse(process.env.AIP_TEST_CRASH_OVERWRITE);
    writeFileSync(path, text);
  }
  if (after) {
    return proceed().then((result) => {
      crash();
      return new Promise((resolve) => setTimeout(() => resolve(result), 100));
    });
  }
  crash();
  return proceed();
});
