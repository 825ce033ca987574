// Preload (`node --import fixed-random-bytes.mjs aipcs ...`): node:crypto's
// randomBytes returns zero bytes, so that a test knows a random name in
// advance (an export's temp file) and can plant something there first. The
// product has no such hook; this patches the built-in module's live ESM
// bindings from outside (as fail-fs-call.mjs does).
import { createRequire, syncBuiltinESMExports } from 'node:module';

const crypto = createRequire(import.meta.url)('node:crypto');
crypto.randomBytes = function zeroBytes(size, callback) {
  const bytes = Buffer.alloc(size);
  if (typeof callback !== 'function') return bytes;
  process.nextTick(callback, null, bytes);
  return undefined;
};
syncBuiltinESMExports();
