// Shared by the crash-at.mjs and change-at.mjs preloads: with SPEC =
// NAME:N, `atNthCall` runs instead of the Nth call of fs/promises' NAME whose
// first argument contains ONLY (every call counts when ONLY is empty); it is
// handed the call's arguments and a `proceed` function that makes the call.
// The product has no fault hooks; this patches the built-in module's live ESM
// bindings from outside.
import { createRequire, syncBuiltinESMExports } from 'node:module';

export function hookNthFsPromisesCall(spec, only, atNthCall) {
  const match = /^([A-Za-z]+):([0-9]+)$/.exec(spec);
  if (match === null) return;
  const [, name, nth] = match;
  const fsp = createRequire(import.meta.url)('node:fs/promises');
  const original = fsp[name];
  if (typeof original !== 'function') throw new Error(`fs/promises has no ${name}`);
  let calls = 0;
  fsp[name] = function hooked(...args) {
    const proceed = () => original.apply(this, args);
    if (!String(args[0]).includes(only)) return proceed();
    calls += 1;
    return calls === Number(nth) ? atNthCall(args, proceed) : proceed();
  };
  syncBuiltinESMExports();
}
