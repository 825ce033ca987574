// Preload for file-failure tests (`node --import fail-fs-call.mjs aipcs ...`):
// with AIPCS_TEST_FAIL_FS=NAME (a node:fs function, e.g. unlinkSync) and
// AIPCS_TEST_FAIL_MATCH=TEXT, the first call of NAME whose first argument
// contains TEXT throws EIO instead of running: a file system failing at that
// one step. The product has no such hook; this patches the built-in
// module's live ESM bindings from outside (as signal-after-create.mjs does).
import { createRequire, syncBuiltinESMExports } from 'node:module';

const name = process.env.AIPCS_TEST_FAIL_FS ?? '';
const match = process.env.AIPCS_TEST_FAIL_MATCH ?? '';
if (name !== '') {
  const fs = createRequire(import.meta.url)('node:fs');
  const original = fs[name];
  if (typeof original !== 'function') throw new Error(`node:fs has no ${name}`);
  let failed = false;
  fs[name] = function failOnce(...args) {
    if (!failed && String(args[0]).includes(match)) {
      failed = true;
      throw Object.assign(new Error(`EIO: i/o error, ${name}`), { code: 'EIO', errno: -5, syscall: name });
    }
    return original.apply(this, args);
  };
  syncBuiltinESMExports();
}
