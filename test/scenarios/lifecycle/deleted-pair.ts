// The two pods of a stop by deletion on the real kubelet (the Eviction API, a
// taint, a preemption): `fitted`, drainguard in wrap mode guarding a Role with a
// reconcile in flight, and `bare`, the same operator without drainguard. What
// each scenario asserts of them once both are gone, and the figures it prints.
import * as assert from 'uvu/assert';
import type { TestCluster } from '../../support/cluster/index.ts';
import { type RealNode, kubeletKills, wrapLogs, wrapStderr, wrapStdout } from '../../support/node/index.ts';

export interface DeletedPair {
  readonly c: TestCluster;
  readonly node: RealNode;
  readonly ns: string;
  readonly fitted: string;
  readonly bare: string;
  /** The Role drainguard guarded in `fitted`: its API path. */
  readonly guarded: string;
  /** What drainguard must have read from the Pod at the signal. */
  readonly cause: string;
  readonly disruption: string;
  /** The deletion's grace, which the kubelet stops the container with. */
  readonly graceS: number;
}

export interface PairFigures {
  /** The kubelet's stop (epoch ms, from its log). */
  readonly stoppedAt: number;
  readonly drainMs: number;
  /** From the guard's release, and from drainguard's last line, to the kubelet's SIGKILL. */
  readonly marginMs: number;
  readonly lastMs: number;
}

const timeline = (node: RealNode, pod: string) => `--- ${pod}\n${wrapStdout(node, pod).join('\n')}\n${wrapStderr(node, pod).join('\n')}`;

/**
 * fitted: the cause and the deletion's deadline read at the signal, the reconcile done, the
 * operator stopped by drainguard, the guard released before the kubelet's SIGKILL, nothing left on
 * the Role; bare: the kubelet's SIGTERM went to the operator itself, mid-reconcile.
 */
export async function assertDeletedPair(p: DeletedPair): Promise<PairFigures> {
  const { node, fitted } = p;
  const f = wrapLogs(node, fitted);
  const read = f.find((l) => l.msg === 'deletion read from the Pod');
  assert.equal(
    [read?.cause, read?.disruption, read?.deletionGracePeriodMs],
    [p.cause, p.disruption, p.graceS * 1000],
    `the ${p.cause} read from the Pod:\n${timeline(node, fitted)}`,
  );
  const drain = f.find((l) => l.msg === 'drain ended');
  assert.is(drain?.outcome, 'drained', timeline(node, fitted));
  assert.ok(Number(drain?.durationMs) >= 1000, `the reconcile was in flight at the signal: the drain took ${drain?.durationMs} ms`);
  const out = wrapStdout(node, fitted);
  assert.ok(out.includes('work done 0') && !out.includes('work interrupted 0'), `the reconcile completed:\n${timeline(node, fitted)}`);
  assert.ok(out.includes('signal SIGTERM'), 'the operator got its stop signal from drainguard');
  const released = f.find((l) => l.msg === 'guard released');
  assert.ok(released, `the guard released:\n${timeline(node, fitted)}`);
  // The kubelet's SIGKILL: the deletion's grace from when it began the stop (its log).
  const [kill] = kubeletKills(node, p.ns, fitted, 'manager');
  assert.is(kill?.gracePeriodS, p.graceS, "the kubelet stopped the container with the deletion's grace");
  const killAt = kill!.at + p.graceS * 1000;
  const marginMs = killAt - Date.parse(String(released.time));
  assert.ok(marginMs > 0, `released ${marginMs} ms before the kubelet's SIGKILL`);
  assert.equal((await p.c.api.get(p.guarded))?.metadata?.finalizers ?? [], [], 'nothing left on the Role');

  const bare = wrapStdout(node, p.bare);
  assert.ok(
    bare.includes('signal SIGTERM') && bare.includes('work interrupted 0'),
    `the control's reconcile interrupted:\n${bare.join('\n')}`,
  );
  assert.not.ok(bare.includes('work done 0'));
  return { stoppedAt: kill!.at, drainMs: Number(drain?.durationMs), marginMs, lastMs: killAt - Date.parse(String(f.at(-1)?.time)) };
}
