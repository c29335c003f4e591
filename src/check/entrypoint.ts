// What `drainguard run -- COMMAND` starts in wrap mode, against what the
// manifests show of the operator container. check reads no image, so it cannot
// know the image's ENTRYPOINT; what it can tell from the manifests alone:
//   - no COMMAND after `run` (or only the container's flags): drainguard
//     exits 2 at start;
//   - arguments that are a shell script (`-c` first, or shell syntax: a
//     newline, &&, ||, ;, |, $(...), backquotes) after a COMMAND that is no
//     shell: the image's entrypoint was a shell, and the script now goes to
//     another program;
//   - kubebuilder's /manager (the renders' old default) followed by an
//     argument that is not a flag: a controller-runtime manager takes flags
//     only, so the container's arguments were a command line of their own
//     (an image whose ENTRYPOINT is absent, or a wrapper such as tini).
// What it cannot tell: a COMMAND that is not the image's own while the
// arguments are plain flags (`/manager --leader-elect` on an image whose
// program is /bin/operator); the pod then fails to start (`exec: no such
// file`), and drainguard exits 2 naming the COMMAND it could not start.

import type { Found } from './finding.ts';
import { type Placement, operatorArgv } from './pod.ts';

/** kubebuilder's and operator-sdk's manager binary, which the renders used to assume. */
const KUBEBUILDER_MANAGER = '/manager';
const SHELLS = /(^|\/)(sh|bash|ash|dash|zsh|ksh|busybox)$/;
const SHELL_SYNTAX = /\n|&&|\|\||;\s|\|\s|\$\(|`/;

const SET_COMMAND =
  "set the operator's own command after `--`, as its image runs it " +
  "(the image's ENTRYPOINT and CMD: `crane config IMAGE`, `docker inspect IMAGE`): " +
  'the Helm library chart: drainguard.operator.command; the kustomize components: data.command of the drainguard ConfigMap; ' +
  "or use a sidecar mode, which leaves the container's command as it is";

const TEXT = {
  missing: (where: string, first: string | undefined) => ({
    message:
      first === undefined
        ? `${where} runs drainguard run with no COMMAND after it: drainguard exits 2 at start and the operator never runs`
        : `${where} runs drainguard run with no COMMAND: ` +
          `what follows it is ${JSON.stringify(first)}, a flag of the container's args, which drainguard cannot start (exit 2); ` +
          'the operator never runs',
    fix: SET_COMMAND,
  }),
  script: (where: string, command: string) => ({
    message:
      `${where} wraps ${command}, but its arguments are a shell script: ` +
      `the image's entrypoint is a shell, and ${command} is not one; the pod cannot start as the chart meant it`,
    fix: SET_COMMAND,
  }),
  notFlags: (where: string, first: string) => ({
    message:
      `${where} wraps ${KUBEBUILDER_MANAGER}, kubebuilder's manager, which takes flags only, ` +
      `but its first argument is ${JSON.stringify(first)}: ` +
      `the container's arguments are a command line of their own, and ${KUBEBUILDER_MANAGER} is not the image's entrypoint`,
    fix: SET_COMMAND,
  }),
};

export function checkEntrypoint(placement: Placement): Found[] {
  if (placement.mode !== 'wrap') return [];
  const where = `container ${placement.supervisor.name}`;
  const [command, ...args] = operatorArgv(placement);
  if (command === undefined || command.startsWith('-'))
    return [{ code: 'wrap-command-missing', severity: 'error', ...TEXT.missing(where, command) }];
  if (!SHELLS.test(command) && (/^-[a-z]*c$/.test(args[0] ?? '') || args.some((a) => SHELL_SYNTAX.test(a)))) {
    return [{ code: 'wrap-entrypoint-unknown', severity: 'error', ...TEXT.script(where, command) }];
  }
  if (command === KUBEBUILDER_MANAGER && args.length > 0 && !args[0]!.startsWith('-')) {
    return [{ code: 'wrap-entrypoint-unknown', severity: 'error', ...TEXT.notFlags(where, args[0]!) }];
  }
  return [];
}
