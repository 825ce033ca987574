// Preload for tests (`node --import`): appends the path of every folder
// listing (fs.promises.opendir / readdir) to the file named by
// AIGPT_TEST_LISTINGS_LOG, so a test can count the passes a command makes
// over the memory folder. Inert when the variable is unset.
import fs, { appendFileSync } from 'node:fs';

const log = process.env.AIGPT_TEST_LISTINGS_LOG;
if (log !== undefined && log !== '') {
  for (const name of ['opendir', 'readdir']) {
    const original = fs.promises[name];
    fs.promises[name] = function (path, ...rest) {
      appendFileSync(log, `${String(path)}\n`);
      return original.call(this, path, ...rest);
    };
  }
}
