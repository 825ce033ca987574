// Spec 4.6: only on Windows (symlinks need privileges) does a refused
// symlink become `warn cannot create symlink: {reason}` and setup go on;
// elsewhere it is a failure to create the config name (exit 1), and setup
// prints no step it did not do. Here the config folder is read-only, so the
// symlink is refused with EACCES; as root the child runs as nobody, whom
// the permissions stop. (mutation review Q: S10)

import { spawn } from 'node:child_process';
import { chmodSync, chownSync, promises as fs } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { aigptBin, makeTempHome, type TempHome } from './support.js';

const NOBODY = 65534;
const root = process.getuid?.() === 0;

describe.skipIf(process.platform === 'win32')('aigpt setup when the symlink is refused', () => {
  let home: TempHome;
  beforeEach(() => {
    home = makeTempHome();
  });
  afterEach(() => {
    chmodSync(home.appDir, 0o755);
    home.cleanup();
  });

  it('fails with exit 1 naming the config file, and warns of nothing', async () => {
    chmodSync(home.root, 0o755);
    await fs.mkdir(home.appDir, { recursive: true });
    await fs.mkdir(home.home, { recursive: true });
    if (root) chownSync(home.home, NOBODY, NOBODY);
    chmodSync(home.appDir, 0o555);
    const child = spawn(process.execPath, [aigptBin(), 'setup'], {
      env: { HOME: home.home, XDG_CONFIG_HOME: home.configHome, PATH: join(home.root, 'no-bin') },
      cwd: home.root,
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(root ? { uid: NOBODY, gid: NOBODY } : {}),
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const code = await new Promise<number | null>((resolve, reject) => {
      child.on('error', reject);
      child.on('close', resolve);
    });
    expect(stderr).toBe(`aigpt: Failed to create ${home.configFile}: EACCES: permission denied\n`);
    expect(stdout).toBe('');
    expect(code).toBe(1);
  });
});
