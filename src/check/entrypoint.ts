// What `drainguard run -- COMMAND` starts in wrap mode, against what the
// manifests show of the operator container. check reads no image, so it cannot
// know the image's ENTRYPOINT; what it can tell from the manifests alone:
//   - no COMMAND after `run` (or only the container's flags): drainguard
//     exits 2 at start;
//   - arguments that are a shell script (`-c` first, or shell syntax: a
//     newline, &&, ||, ;, |, a command substitution $(...), backquotes) after
//     a COMMAND that is no shell: the image's entrypoint was a shell, and the
//     script now goes to another program;
//   - kubebuilder's /manager (the renders' old default) followed by another
//     program (a path, a shell, an init such as tini): the container's
//     arguments were a command line of their own (an image whose ENTRYPOINT
//     is absent, or a wrapper). A bare word is a subcommand (CloudNativePG's
//     `/manager controller`).
// Command and args are read as the kubelet gives them to the program: it
// expands Kubernetes' $(VAR) from the container's environment first ($$ an
// escaped `$`, a $(NAME) the container does not set left as it is), so
// `--watch-namespace=$(POD_NAMESPACE)` is no shell.
// What it cannot tell: a COMMAND that is not the image's own while the
// arguments are plain flags (`/manager --leader-elect` on an image whose
// program is /bin/operator); the pod then fails to start (`exec: no such
// file`), and drainguard exits 2 naming the COMMAND it could not start.

import type { Found } from './finding.ts';
import { type Container, type Placement, envOf, operatorArgv } from './pod.ts';

/** kubebuilder's and operator-sdk's manager binary, which the renders used to assume. */
const KUBEBUILDER_MANAGER = '/manager';
const SHELLS = /(^|\/)(sh|bash|ash|dash|zsh|ksh|busybox)$/;
/** Programs that run the command line after them: an image's init or a shell. */
const RUNNERS = /^(sh|bash|ash|dash|zsh|ksh|busybox|tini|tini-static|dumb-init|catatonit|env)$/;
/** `$(` opening a command substitution: a bare `$(NAME)` is Kubernetes' (escaped as $$, or a NAME not set: told apart). */
const SHELL_SYNTAX = /\n|&&|\|\||;\s|\|\s|\$\((?![A-Za-z_][A-Za-z0-9_]*\))|`/;
/** The variables of Services the kubelet adds to a container (`enableServiceLinks`; the API server's own always). */
const SERVICE_VARIABLE = /^[A-Z0-9_]+_(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?|PORT(_\d+_(TCP|UDP|SCTP)(_(PROTO|PORT|ADDR))?)?)$/;
/** What a key of a ConfigMap or Secret in envFrom can be: any such name may come from there. */
const ENV_FROM_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;

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
  unset: (where: string, command: string, word: string, name: string) => ({
    message:
      `${where} wraps ${command}, and its argument ${JSON.stringify(word)} has $(${name}), which the container does not set: ` +
      'Kubernetes passes it on as it is, and only a shell would read it (a command substitution), ' +
      `so the image's entrypoint is a shell and ${command} is not one; ` +
      `if it is meant as Kubernetes' $(VAR), add ${name} to the container's env`,
    fix: SET_COMMAND,
  }),
  program: (where: string, first: string) => ({
    message:
      `${where} wraps ${KUBEBUILDER_MANAGER}, kubebuilder's manager, but its first argument is ${JSON.stringify(first)}, ` +
      'another program (a path, a shell or an init), not a subcommand: ' +
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
  if (!SHELLS.test(command)) {
    const sets = settable(placement.supervisor);
    const given = args.map((word) => ({ word, ...asGiven(word, sets) }));
    if (/^-[a-z]*c$/.test(args[0] ?? '') || given.some((g) => SHELL_SYNTAX.test(g.text)))
      return [{ code: 'wrap-entrypoint-unknown', severity: 'error', ...TEXT.script(where, command) }];
    const unset = given.find((g) => g.unset.length > 0);
    if (unset) return [{ code: 'wrap-entrypoint-unknown', severity: 'error', ...TEXT.unset(where, command, unset.word, unset.unset[0]!) }];
  }
  const first = args[0];
  if (command === KUBEBUILDER_MANAGER && first !== undefined && !first.startsWith('-') && !first.includes('$(') && isProgram(first)) {
    return [{ code: 'wrap-entrypoint-unknown', severity: 'error', ...TEXT.program(where, first) }];
  }
  return [];
}

/** A path, an init or a shell, or the manager's own name: a program, where a subcommand would be a bare word of its own. */
const isProgram = (word: string): boolean => word.includes('/') || RUNNERS.test(word) || word === 'manager';

/** Whether the container may set a variable NAME: its env, a ConfigMap or Secret of envFrom, the Services' variables. */
function settable(c: Container): (name: string) => boolean {
  const env = envOf(c, {});
  const envFrom = (c.envFrom?.length ?? 0) > 0;
  return (name) => Object.hasOwn(env, name) || SERVICE_VARIABLE.test(name) || (envFrom && ENV_FROM_NAME.test(name));
}

/**
 * WORD as the program is given it, for reading shell syntax in it: Kubernetes'
 * expansion of command and args (k8s.io/kubernetes third_party/forked/golang/expansion,
 * run by the kubelet with the container's whole environment), each variable the
 * container may set standing as a plain `V`; and the names of the $(NAME) it
 * does not set, which Kubernetes leaves as they are.
 */
function asGiven(word: string, sets: (name: string) => boolean): { text: string; unset: string[] } {
  let text = '';
  const unset: string[] = [];
  for (let i = 0; i < word.length; i++) {
    const ch = word[i]!;
    if (ch !== '$' || i + 1 === word.length) {
      text += ch;
      continue;
    }
    const close = word.indexOf(')', i + 2);
    if (word[i + 1] === '$') {
      // $$: an escaped `$`.
      text += '$';
      i++;
    } else if (word[i + 1] === '(' && close !== -1) {
      const name = word.slice(i + 2, close);
      if (sets(name)) text += 'V';
      else {
        text += `$(${name})`;
        unset.push(name);
      }
      i = close;
    } else text += '$';
  }
  return { text, unset };
}
