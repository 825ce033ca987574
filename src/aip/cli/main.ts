#!/usr/bin/env node
// The `aip` executable. The work is in entry.ts; the launcher turns a broken
// install (a dependency missing from node_modules) into one clear line.

import { launch } from '../../common/launch.js';

await launch('aip', () => import('./entry.js'));
