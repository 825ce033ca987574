// Shared by the crash-at.mjs and change-at.mjs preloads: with SPEC =
// NAME:N, `atNthCall` runs instead of the Nth call of fs/promises' NAME (or
// of node:fs' NAME when it ends in Sync: the working tree's walk) whose
// first argument contains ONLY (every call counts when ONLY is empty); it is
// handed the call's arguments and a `proceed` function that makes the call.
// The product has no fault hooks; this patches the built-in module's live ESM
// bindings from outside.
import { createRequire, syncBuiltinESMExports } from 'node:module';

export function hookNthFsCall(spec, only, atNthCall) {
  const match = /^([A-Za-z]+):([0-9]+)$/.exec(spec);
  if (match === null) return;
  const [, name, nth] = match;
  const module = name.endsWith('Sync') ? 'node:fs' : 'node:fs/promises';
  const target = createRequire(import.meta.url)(module);
  const original = target[name];
  if (typeof original !== 'function') throw new Error(`${module} has no ${name}`);
  let calls = 0;
  target[name] = function hooked(...args) {
    const proceed = () => original.apply(this, args);
    if (!String(args[0]).includes(only)) return proceed();
    calls += 1;
    return calls === Number(nth) ? atNthCall(args, proceed) : proceed();
  };
  syncBuiltinESMExports();
}
