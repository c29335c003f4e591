// What `drainguard install DIR` writes, and how a running drainguard tells
// whether it was started from such a directory.
//
//   DIR/drainguard                  the launcher: static, no libc (launcher.S)
//   DIR/lib/drainguard              the executable proper (Node.js with drainguard injected)
//   DIR/lib/ld-linux-x86-64.so.2    the dynamic loader the launcher execs
//                                   (ld-linux-aarch64.so.1 on linux/arm64)
//   DIR/lib/lib*.so.*               the shared libraries the executable needs
//
// The launcher execs the loader explicitly, so the kernel's /proc/self/exe
// (and with it Node's process.execPath) names the loader, while argv[0]
// (process.argv0) is set to the launcher's own path.

import { existsSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';

export const LAUNCHER = 'drainguard';
export const LIB_DIR = 'lib';
export const PROGRAM = join(LIB_DIR, 'drainguard');
/** glibc's loader on each architecture: the name its launcher execs. */
export const LOADER_NAMES: Readonly<Partial<Record<NodeJS.Architecture, string>>> = {
  x64: 'ld-linux-x86-64.so.2',
  arm64: 'ld-linux-aarch64.so.1',
};
/**
 * The loader of this architecture under DIR, the name the launcher execs;
 * the loader is copied under this name whatever it is called on the build host.
 * (An architecture without a launcher keeps the x86-64 name: install refuses it.)
 */
export const LOADER = join(LIB_DIR, LOADER_NAMES[process.arch] ?? LOADER_NAMES.x64!);

export interface Running {
  readonly execPath: string;
  readonly argv0: string;
}

const current = (): Running => ({ execPath: process.execPath, argv0: process.argv0 });

function real(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}

/** The launcher's path (absolute) when this process was started through one, else undefined. */
export function launcherPath({ execPath, argv0 }: Running = current()): string | undefined {
  if (!argv0.includes('/')) return undefined;
  const launcher = real(argv0);
  const exec = real(execPath);
  if (launcher === undefined || exec === undefined) return undefined;
  const dir = dirname(launcher);
  // With /proc, execPath is the loader; without it, Node falls back to argv[0]: the launcher itself.
  const viaLauncher = exec === real(join(dir, LOADER)) || exec === launcher;
  return viaLauncher && existsSync(join(dir, PROGRAM)) ? launcher : undefined;
}

/** DIR when this process was started as DIR/drainguard, else undefined. */
export function installedDir(running: Running = current()): string | undefined {
  const launcher = launcherPath(running);
  return launcher === undefined ? undefined : dirname(launcher);
}

/**
 * The file to execute to run this drainguard again: the launcher when it was
 * started through one (process.execPath is then the loader, which does not
 * take drainguard's arguments), process.execPath otherwise.
 */
export function selfExecutable(running: Running = current()): string {
  return launcherPath(running) ?? running.execPath;
}
