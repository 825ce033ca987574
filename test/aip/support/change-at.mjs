// Preload for race tests (`node --import change-at.mjs aip ...`): another
// process changing the tree at one exact moment of a walk. With
// AIP_TEST_CHANGE_AT=NAME:N, just before the Nth call of fs/promises' NAME
// (node:fs' NAME when it ends in Sync, as the walk's calls do) whose first
// argument contains AIP_TEST_CHANGE_MATCH (every call when unset), the path
// AIP_TEST_CHANGE_PATH (default: that argument) is changed as
// AIP_TEST_CHANGE_DO says: `remove` (deleted, a folder with its content),
// `fifo` (replaced by a FIFO), `file` (replaced by an empty regular file),
// `folder` (replaced by a folder holding `inside.txt`) or `link` (replaced by
// a symbolic link to an existing file) or `text` (replaced by a file holding
// AIP_TEST_CHANGE_TEXT, as another aip process moving HEAD would leave it).
// Then the call runs as usual.
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { hookNthFsCall } from './hook-fs-call.mjs';

const action = process.env.AIP_TEST_CHANGE_DO ?? 'remove';
hookNthFsCall(process.env.AIP_TEST_CHANGE_AT ?? '', process.env.AIP_TEST_CHANGE_MATCH ?? '', (args, proceed) => {
  const path = process.env.AIP_TEST_CHANGE_PATH || String(args[0]);
  rmSync(path, { recursive: true, force: true });
  if (action === 'fifo') execFileSync('mkfifo', [path]);
  else if (action === 'file') writeFileSync(path, '');
  else if (action === 'link') symlinkSync('/dev/null', path);
  else if (action === 'text') writeFileSync(path, process.env.AIP_TEST_CHANGE_TEXT ?? '');
  else if (action === 'folder') {
    mkdirSync(path);
    writeFileSync(`${path}/inside.txt`, 'inside\n');
  } else if (action !== 'remove') throw new Error(`AIP_TEST_CHANGE_DO: unknown action ${action}`);
  return proceed();
});
