// A container's root without a container runtime (none can start containers on
// the machines the tests run on): the image's files, mounted read-only as with
// readOnlyRootFilesystem, with volumes bind-mounted from host directories and
// /proc and /dev/null mounted, all in a mount namespace of the started
// process's own, which goes away with it. The process runs as the image's
// non-root user.
//
// unshare, sh and chroot exec one another: the process the test starts is the
// one that ends up running the command. With a PID namespace of its own, as a
// container has, unshare forks instead: the command is PID 1 there, the child
// of the process the test starts (`nsInit`).

import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Proc, childrenOf, tempDir } from '../../support/proc.ts';

const SETUP = `set -e
lower=$1 upper=$2 work=$3 merged=$4 user=$5; shift 5
mount -t overlay overlay -o "ro,lowerdir=$lower,upperdir=$upper,workdir=$work" "$merged"
while [ "$1" != -- ]; do mount --bind "$1" "$merged$2"; shift 2; done; shift
mount -t proc proc "$merged/proc"
mount --bind /dev/null "$merged/dev/null"
exec chroot --userspec="$user" "$merged" "$@"`;

export interface PodRootOptions {
  /** The image's root (read-only). */
  readonly image: string;
  /** Mount path in the root → directory on the host (made writable for every user, as an emptyDir is). */
  readonly volumes: Readonly<Record<string, string>>;
  /** Files to add to the root, as a container's image layers would: path in the root → file on the host. */
  readonly files?: Readonly<Record<string, string>>;
  /** uid:gid to run as. */
  readonly user: string;
  /** A PID namespace of its own, the command its PID 1. */
  readonly pidNamespace?: boolean;
}

export function podRoot({ image, volumes, files = {}, user, pidNamespace = false }: PodRootOptions) {
  return {
    run(argv: readonly string[], env: NodeJS.ProcessEnv = {}): Proc {
      // Each process gets an overlay of its own (one upper directory serves one mount at a time).
      const base = tempDir();
      const upper = join(base, 'upper');
      for (const dir of ['/proc', '/dev', ...Object.keys(volumes)]) mkdirSync(join(upper, dir), { recursive: true });
      writeFileSync(join(upper, '/dev/null'), '');
      for (const [path, from] of Object.entries(files)) {
        mkdirSync(join(upper, path, '..'), { recursive: true });
        copyFileSync(from, join(upper, path));
      }
      for (const dir of ['work', 'merged']) mkdirSync(join(base, dir));
      const binds = Object.entries(volumes).flatMap(([path, host]) => [host, path]);
      return new Proc(
        'unshare',
        [
          ...(pidNamespace ? ['--pid', '--fork'] : []),
          '--mount',
          '--propagation',
          'private',
          '/bin/sh',
          '-c',
          SETUP,
          'sh',
          image,
          upper,
          join(base, 'work'),
          join(base, 'merged'),
          user,
          ...binds,
          '--',
          ...argv,
        ],
        env,
        { ownPidNamespace: pidNamespace },
      );
    },
  };
}

/** The host's pid of PID 1 of the namespace of a `pidNamespace` run: unshare's only child. */
export function nsInit(p: Proc): number {
  const [pid, ...more] = childrenOf(p.pid);
  if (pid === undefined || more.length > 0) throw new Error(`unshare (pid ${p.pid}) should have one child, PID 1 of its namespace`);
  return pid;
}
