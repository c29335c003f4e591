// The images of this project's manifests, as the kubelet stand-in runs them:
// drainguard's image is the built executable, the example operator's image is
// a test fixture in place of its /manager.

import { EXE, NODE } from '../proc.ts';
import type { Launch, Runner } from './container.ts';

export const DRAINGUARD_IMAGE = 'ghcr.io/drainguard/drainguard';

/**
 * `/drainguard/drainguard` inside drainguard's image is dist/drainguard; `env` is
 * added (a shorter Lease, say). Its built-in socket path, /run/drainguard/drain.sock,
 * is not in the manifest for the stand-in to map: the runner names the mounted one.
 */
export function drainguardImage(env: NodeJS.ProcessEnv = {}): Runner {
  return (run): Launch | undefined => {
    // The image's entrypoint is /drainguard/drainguard (Containerfile): args alone are its arguments.
    const argv = run.hook === undefined && run.container.command === undefined ? ['/drainguard/drainguard', ...run.argv] : run.argv;
    if (argv[0] !== '/drainguard/drainguard') return undefined;
    const socket = run.env.DRAINGUARD_SOCKET === undefined ? run.hostPath('/run/drainguard/drain.sock') : undefined;
    return { file: EXE, args: argv.slice(1), env: { ...(socket && { DRAINGUARD_SOCKET: socket }), ...env } };
  };
}

/**
 * An operator image whose `/manager` is `script` (run by Node.js), wherever it
 * stands in argv (the wrap mode runs `/drainguard/drainguard run -- /manager`,
 * the launcher `drainguard install` wrote into the pod's emptyDir).
 * The script serves none of the container's probes. Exec hooks run as written.
 */
export function operatorImage(script: string, env: NodeJS.ProcessEnv = {}): Runner {
  return (run): Launch | undefined => {
    if (run.hook) return undefined;
    const i = run.argv.indexOf('/manager');
    if (i === -1) return undefined;
    // The manager's own flags (--leader-elect, ...) mean nothing to the script.
    const manager = [NODE, script];
    const argv = [...run.argv.slice(0, i), ...manager];
    return { file: argv[0]!, args: argv.slice(1), env, probes: false };
  };
}
