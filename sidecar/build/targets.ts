// The architectures drainguard is built for, and where each executable goes:
// dist/drainguard is the one for this machine (what the tests and the demo
// run), dist/drainguard-linux-ARCH one built for another architecture.

import { join } from 'node:path';

export type Arch = 'x64' | 'arm64';

export interface Target {
  readonly arch: Arch;
  /** The GNU triplet: binutils' prefix, Debian's multiarch directory. */
  readonly gnu: string;
  /** qemu-user's name for it (qemu-NAME-static). */
  readonly qemu: string;
}

export const TARGETS: Readonly<Record<Arch, Target>> = {
  x64: { arch: 'x64', gnu: 'x86_64-linux-gnu', qemu: 'x86_64' },
  arm64: { arch: 'arm64', gnu: 'aarch64-linux-gnu', qemu: 'aarch64' },
};

export function isArch(name: string): name is Arch {
  return Object.hasOwn(TARGETS, name);
}

/** Runs natively on this machine (else under qemu-user). */
export const isNative = (arch: Arch): boolean => arch === process.arch;

export const executableName = (arch: Arch): string => (isNative(arch) ? 'drainguard' : `drainguard-linux-${arch}`);

export function executablePath(root: string, arch: Arch): string {
  return join(root, 'dist', executableName(arch));
}
