// A GOPROXY=file:// tree of this checkout's Go modules at the package
// version (scripts/release/go-module.ts), and scratch modules outside the
// repository that fetch from it into a module cache of their own.

import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { GO_MODULE_DIRS, type ModuleVersion, goModule, writeProxy } from '../../../scripts/release/go-module.ts';
import { commitTime, packageVersion } from '../../../sidecar/build/stamp.ts';
import { GO, goEnv } from '../../support/go.ts';
import { tempDir } from '../../support/proc.ts';

const GO_MS = 240_000;

export function goProxy() {
  const ROOT = resolve('.');
  const VERSION = `v${packageVersion(ROOT)}`;
  const CLIENT = goModule(ROOT, GO_MODULE_DIRS[0]);
  const CTRL_DIR = GO_MODULE_DIRS[1];
  const CTRL = goModule(ROOT, CTRL_DIR);
  const proxy = tempDir();
  const modules: ModuleVersion[] = writeProxy(proxy, ROOT, VERSION, new Date((commitTime(ROOT) ?? 0) * 1000));

  /** A scratch module NAME fetching from the proxy, then UPSTREAM; a fresh module cache: everything it builds came from there. */
  function scratch(
    name: string,
    goVersion: string,
    upstream: string[] = [],
  ): { dir: string; modcache: string; go: (...args: string[]) => string } {
    const base = tempDir();
    const dir = join(base, name);
    const modcache = join(base, 'modcache');
    mkdirSync(dir);
    writeFileSync(join(dir, 'go.mod'), `module example.com/${name}\n\ngo ${goVersion}\n`);
    const env = {
      ...goEnv(),
      GOPROXY: [`file://${proxy}`, ...upstream].join(','),
      GOSUMDB: 'off',
      GOFLAGS: '-mod=mod -modcacherw -trimpath', // -trimpath: goEnv's, so the build cache serves what ctrlBuild compiled
      GOMODCACHE: modcache,
      GOWORK: 'off',
    };
    const go = (...args: string[]) =>
      execFileSync(GO, args, { cwd: dir, env, encoding: 'utf8', timeout: GO_MS, stdio: ['ignore', 'pipe', 'pipe'] });
    return { dir, modcache, go };
  }

  return { ROOT, VERSION, CLIENT, CTRL, CTRL_DIR, proxy, modules, scratch };
}

export function listFiles(dir: string, prefix = ''): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? listFiles(join(dir, e.name), `${prefix}${e.name}/`) : [`${prefix}${e.name}`],
  );
}

export const quote = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
