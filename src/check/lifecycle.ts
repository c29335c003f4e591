// Lifecycle hooks the API server refuses: a handler holds exactly one action
// (exec, httpGet, tcpSocket or sleep). Merging drainguard's exec into a
// container that already had a preStop (a `sleep: {seconds: 5}`, an exec of
// its own) makes one with two, and the whole pod is refused.

import type { Found } from './finding.ts';
import type { Container, PodSpec } from './pod.ts';

const ACTIONS = ['exec', 'httpGet', 'tcpSocket', 'sleep'] as const;

const TEXT = {
  message: (where: string, hook: string, actions: readonly string[]) =>
    `the ${hook} hook of ${where} holds ${actions.join(' and ')}: ` +
    'a handler takes exactly one action, and the API server refuses the pod ("may not specify more than 1 handler type")',
  fix: (where: string, hook: string, actions: readonly string[]) =>
    actions.includes('exec')
      ? `keep one action in the ${hook} hook of ${where}: ` +
        "drainguard's exec [/drainguard/drainguard, prestop], " +
        'which blocks until the operator has drained (a fixed pause only guesses at that); ' +
        `drop the ${actions.filter((a) => a !== 'exec').join(' and ')}`
      : `keep one action in the ${hook} hook of ${where}`,
};

export function checkHooks(pod: PodSpec): Found[] {
  const out: Found[] = [];
  for (const c of [...(pod.initContainers ?? []), ...pod.containers] as Container[]) {
    for (const hook of ['preStop', 'postStart'] as const) {
      const handler = c.lifecycle?.[hook] as Record<string, unknown> | undefined;
      const actions = ACTIONS.filter((a) => handler?.[a] !== undefined && handler[a] !== null);
      if (actions.length > 1)
        out.push({
          code: 'hook-invalid',
          severity: 'error',
          message: TEXT.message(`container ${c.name}`, hook, actions),
          fix: TEXT.fix(`container ${c.name}`, hook, actions),
        });
    }
  }
  return out;
}
