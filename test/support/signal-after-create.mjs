// Preload for signal tests (`node --import signal-after-create.mjs aipcs ...`):
// with AIPCS_TEST_SIGNAL_AFTER=NAME (a node:fs function, e.g. mkdtempSync or
// openSync) and AIPCS_TEST_SIGNAL_MATCH=TEXT, the process sends itself
// SIGINT right after the first call of NAME whose first argument contains
// TEXT returns: a Ctrl-C landing the moment a file or folder exists, before
// the code after it has run. The product has no such hook; this patches the
// built-in module's live ESM bindings from outside.
import { createRequire, syncBuiltinESMExports } from 'node:module';

const name = process.env.AIPCS_TEST_SIGNAL_AFTER ?? '';
const match = process.env.AIPCS_TEST_SIGNAL_MATCH ?? '';
if (name !== '') {
  const fs = createRequire(import.meta.url)('node:fs');
  const original = fs[name];
  if (typeof original !== 'function') throw new Error(`node:fs has no ${name}`);
  let fired = false;
  fs[name] = function signalAfter(...args) {
    const result = original.apply(this, args);
    if (!fired && String(args[0]).includes(match)) {
      fired = true;
      process.kill(process.pid, 'SIGINT');
    }
    return result;
  };
  syncBuiltinESMExports();
}
