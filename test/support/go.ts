// Go for the tests: Go 1.23 (controller-runtime v0.20 needs it; Debian's
// golang-1.23-go), offline against ../shared/goproxy, with the build and
// module caches outside the clone (~/.cache/drainguard-go), so that .ci/run's
// warm-up, every test file and the next clone on this machine share them.

import { execFileSync } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

const REPO = resolve(import.meta.dirname, '../..');
const CACHE = join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'drainguard-go');

/** The go command: $GO, else Debian's Go 1.23. */
export const GO = process.env.GO ?? '/usr/lib/go-1.23/bin/go';

/** The environment of every go command: offline, the repository's caches. */
export function goEnv(): NodeJS.ProcessEnv {
  const proxy = resolve(REPO, '../shared/goproxy');
  return {
    ...process.env,
    GOTOOLCHAIN: 'local',
    GOFLAGS: '-mod=mod',
    GOSUMDB: 'off',
    GOPROXY: existsSync(proxy) ? `file://${realpathSync(proxy)}` : (process.env.GOPROXY ?? 'https://proxy.golang.org'),
    GOCACHE: join(CACHE, 'build'),
    GOMODCACHE: join(CACHE, 'mod'),
  };
}

/** `go build -o OUT PKG` in the module at `dir`; returns OUT. */
export function goBuild(dir: string, pkg: string, out: string): string {
  execFileSync(GO, ['build', '-o', out, pkg], { cwd: resolve(REPO, dir), env: goEnv(), stdio: ['ignore', 'inherit', 'inherit'] });
  return out;
}
