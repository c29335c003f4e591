// The release finishes inside the Pod's grace period, whatever the Pod's
// terminationGracePeriodSeconds and DRAINGUARD_GRACE_PERIOD say (equal,
// shorter, longer, unset), in wrap and in sidecar mode: the pod is deleted,
// drainguard drains, releases and exits, and no finalizer of this pod is left
// when it has exited. Kubebuilder's case (Pod grace 10 s, nothing set for
// drainguard) is an uninstall, as in the report: the operator's objects are
// deleted too (drainguard's own RBAC is kept), and every one must be released
// with the rest, in two waves, inside the 10 s.
// On the real control plane (test/support/cluster), pods bound to a Node and pod-bound tokens.
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { NODE, type Proc, drainguard, fixture, tempDir } from '../support/proc.ts';
import { type Install, finalizer, withCluster } from './cluster.ts';

type Mode = 'wrap' | 'sidecar';
const POD_GRACE = [10, 30, 90];
const CONFIGURED = ['unset', 'equal', 'shorter', 'longer'] as const;

function configured(podGrace: number, how: (typeof CONFIGURED)[number]): string | undefined {
  if (how === 'unset') return undefined;
  return `${how === 'equal' ? podGrace : how === 'shorter' ? podGrace - 2 : podGrace + 20}s`;
}

/** The grace period the kubelet goes by, and drainguard must: the Pod's, or a shorter one it was given. */
const effective = (podGrace: number, how: (typeof CONFIGURED)[number]) => (how === 'shorter' ? podGrace - 2 : podGrace) * 1000;

async function stop(c: Install, mode: Mode, podGrace: number, how: (typeof CONFIGURED)[number]): Promise<void> {
  const name = `op-${mode}-${podGrace}-${how}`;
  const pod = await c.pod(name, podGrace);
  const grace = configured(podGrace, how);
  const env = { ...(grace !== undefined && { DRAINGUARD_GRACE_PERIOD: grace }), FIXTURE_WORK: '300' };
  let operator: Proc | undefined;
  let supervisor: Proc;
  if (mode === 'wrap') {
    supervisor = await c.run(pod, env);
    await supervisor.line('ready');
  } else {
    const socket = join(tempDir(), 'drain.sock');
    supervisor = drainguard(['sidecar'], {
      KUBECONFIG: await c.kubeconfig(pod),
      DRAINGUARD_GUARD: c.guard,
      DRAINGUARD_POD_NAME: pod.name,
      DRAINGUARD_POD_NAMESPACE: c.ns,
      DRAINGUARD_POD_UID: pod.uid,
      DRAINGUARD_SOCKET: socket,
      DRAINGUARD_HTTP_ADDR: '127.0.0.1:0',
      ...env,
    });
    await supervisor.log('sidecar ready');
    operator = new (supervisor.constructor as typeof Proc)(NODE, [fixture('operator.ts')], {
      DRAINGUARD_SOCKET: socket,
      FIXTURE_WORK: '300',
    });
    await operator.line('ready');
  }
  try {
    await c.cluster.waitFor(
      async () => Object.values(await c.holders()).every((h) => h.includes(finalizer(pod))),
      10_000,
      `guard of ${name}`,
    );
    // The Pod's grace period must have been read before the stop, as in a pod that ran a while.
    if (how !== 'equal' && how !== 'shorter')
      await supervisor.log(mode === 'wrap' ? 'grace period read from the Pod' : 'grace period read from the Pod', 10_000);
    await c.deletePod(name);
    const uninstall = podGrace === 10 && how === 'unset';
    if (uninstall) await c.uninstall();
    if (mode === 'wrap') {
      supervisor.kill('SIGTERM');
    } else {
      // A native sidecar: the preStop hook drains, the operator stops, then the sidecar gets SIGTERM.
      const hook = drainguard(['prestop'], {
        DRAINGUARD_SOCKET: supervisor.logs().find((l) => l.msg === 'sidecar ready')!.socket as string,
      });
      assert.equal((await hook.exit()).code, 0);
      operator!.kill('SIGTERM');
      await operator!.exit();
      supervisor.kill('SIGTERM');
    }
    const exit = await supervisor.exit(effective(podGrace, how) + 5000);
    assert.equal(exit.code, 0, supervisor.stderr.join('\n'));
    const left = Object.entries(await c.holders()).filter(([, h]) => h.includes(finalizer(pod)));
    assert.equal(left, [], `${name}: finalizers left at exit\n${supervisor.stderr.join('\n')}`);
    const released = supervisor.logs().find((l) => l.msg === 'guard released');
    assert.ok(released, `${name}: ${supervisor.stderr.join('\n')}`);
    if (uninstall)
      assert.equal(
        released.deleted,
        [
          `clusterrole/${c.name}`,
          `clusterrolebinding/${c.name}`,
          `lease/${c.ns}/drainguard-${pod.uid}-anchor`,
          `serviceaccount/${c.ns}/op`,
        ],
        `${name}: the uninstalled objects went with the release`,
      );
    const terminated = supervisor.logs().find((l) => l.msg === 'termination requested')!;
    assert.equal(terminated.gracePeriodMs, effective(podGrace, how), `${name}: grace period in force`);
    assert.equal(
      terminated.gracePeriodFrom,
      how === 'shorter' ? 'DRAINGUARD_GRACE_PERIOD' : how === 'equal' ? 'DRAINGUARD_GRACE_PERIOD' : 'pod',
      `${name}: where it came from`,
    );
  } finally {
    supervisor.killAll();
    operator?.kill('SIGKILL');
  }
}

for (const mode of ['wrap', 'sidecar'] as const) {
  for (const podGrace of POD_GRACE) {
    test(`${mode}, Pod grace ${podGrace}s: the release completes inside it with DRAINGUARD_GRACE_PERIOD ${CONFIGURED.join(', ')}`, async () => {
      // Each in an install of its own (the uninstall deletes the operator's ServiceAccount), on the
      // real control plane: its authorizer drops a deleted role 0.1-0.2 s after it is gone.
      for (const how of CONFIGURED) await withCluster((c) => stop(c, mode, podGrace, how));
    });
  }
}

test.run();
