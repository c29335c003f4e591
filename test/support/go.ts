// Go for the tests, with the environment's own settings (GOPROXY, GOMODCACHE,
// GOCACHE): the go command on PATH, or $GO. The standard-library client
// (clients/go) builds with any Go from 1.19 on; clients/go/ctrl needs
// controller-runtime's modules and the Go release its go.mod names, and is
// built and tested only where `go mod download` can fetch them (a reachable
// GOPROXY or a filled GOMODCACHE). test/run.ts finds out once per run and
// hands the answer to the files in TEST_GO_MODULES.

import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

const REPO = resolve(import.meta.dirname, '../..');
const CTRL = resolve(REPO, 'clients/go/ctrl');
const DOWNLOAD_MS = 300_000;

export const GO_MODULES_VARIABLE = 'TEST_GO_MODULES';

/** The go command: $GO, else `go` on PATH. */
export const GO = process.env.GO ?? 'go';

/** The environment of every go command: the caller's, but never a toolchain download. */
export function goEnv(): NodeJS.ProcessEnv {
  return { ...process.env, GOTOOLCHAIN: 'local' };
}

const version = (text: string) => (/go(\d+)\.(\d+)/.exec(text) ?? []).slice(1).map(Number);
const older = (a: number[], b: number[]) => a[0]! < b[0]! || (a[0] === b[0] && a[1]! < b[1]!);

/** Why clients/go/ctrl cannot be built here, or undefined when it can (its modules are then downloaded). */
export function ctrlUnavailable(): string | undefined {
  const given = process.env[GO_MODULES_VARIABLE];
  if (given !== undefined) return given === 'ok' ? undefined : given;
  const have = spawnSync(GO, ['env', 'GOVERSION'], { env: goEnv(), encoding: 'utf8' });
  if (have.status !== 0) return `no Go: ${GO} ${have.error?.message ?? have.stderr.trim()}`;
  const needed = /^go (\S+)/m.exec(readFileSync(resolve(CTRL, 'go.mod'), 'utf8'))![1]!;
  if (older(version(have.stdout), version(`go${needed}`))) return `clients/go/ctrl needs Go ${needed}; ${GO} is ${have.stdout.trim()}`;
  const download = spawnSync(GO, ['mod', 'download'], { cwd: CTRL, env: goEnv(), encoding: 'utf8', timeout: DOWNLOAD_MS });
  if (download.status !== 0) {
    const why = download.error?.message ?? download.stderr.trim().split('\n').slice(-1)[0];
    return `controller-runtime's modules cannot be had (go mod download in clients/go/ctrl: ${why})`;
  }
  return undefined;
}

/** The gofmt of that Go. */
export function gofmt(): string {
  return resolve(execFileSync(GO, ['env', 'GOROOT'], { env: goEnv(), encoding: 'utf8' }).trim(), 'bin/gofmt');
}

/** `go build -o OUT PKG` in the module at `dir`; returns OUT. */
export function goBuild(dir: string, pkg: string, out: string): string {
  execFileSync(GO, ['build', '-o', out, pkg], { cwd: resolve(REPO, dir), env: goEnv(), stdio: ['ignore', 'inherit', 'inherit'] });
  return out;
}

// `node test/support/go.ts [--warm]`: says whether clients/go/ctrl can be built here; --warm builds it.
if (import.meta.main) {
  const missing = ctrlUnavailable();
  process.stdout.write(`clients/go/ctrl: ${missing ?? 'Go and its modules are there: built and tested'}\n`);
  if (!missing && process.argv.includes('--warm')) {
    for (const args of [['build', './...'], ['test', '-race', '-count=1', '-run', '^$', './...']]) {
      execFileSync(GO, args, { cwd: CTRL, env: goEnv(), stdio: ['ignore', 'ignore', 'inherit'] });
    }
  }
}
