// Runs programs of another architecture on this machine as the kernel of that
// architecture would: in a user and mount namespace of their own, with a
// binfmt_misc instance of that namespace's own (Linux 6.7 and later) that hands
// the architecture's ELF files to Debian's qemu-user-static. Nothing changes
// for the rest of the machine; inside, an arm64 program can exec arm64
// programs (its operator, the loader, itself), also after a chroot, since the
// interpreter is opened when it is registered (flag F).
//
// The namespace maps root to root: run it as root (as the tests and CI do).
// unshare and sh exec one another, so the process started is the one that ends
// up running ARGV: its pid, signals and exit status are ARGV's.

import { type Arch, TARGETS } from '../sidecar/build/targets.ts';

/** ELF magic and mask of each architecture's executables, as in Debian's /usr/share/binfmts/qemu-*. */
const BINFMT: Readonly<Partial<Record<Arch, { magic: string; mask: string }>>> = {
  arm64: {
    magic: String.raw`\x7f\x45\x4c\x46\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00`,
    mask: String.raw`\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff`,
  },
};

const SETUP = `set -e
mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
printf '%s' "$1" > /proc/sys/fs/binfmt_misc/register
shift
exec "$@"`;

/** The argv that runs ARGV with ARCH's executables run by qemu-user. */
export function emulated(arch: Arch, argv: readonly string[]): [string, ...string[]] {
  const format = BINFMT[arch];
  if (format === undefined) throw new Error(`no binfmt_misc entry for ${arch} programs`);
  const { magic, mask } = format;
  const qemu = `/usr/bin/qemu-${TARGETS[arch].qemu}-static`;
  const registration = `:drainguard-${arch}:M::${magic}:${mask}:${qemu}:F`;
  return ['unshare', '--user', '--map-root-user', '--mount', '/bin/sh', '-c', SETUP, 'sh', registration, ...argv];
}
