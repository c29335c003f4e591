// The example manifests, mode by mode: drainguard where each mode puts it,
// hardened and sized, with what it needs to find its pod, its socket and
// itself, and an environment drainguard's own configuration accepts.

import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseArgs } from '../../src/config/load.ts';
import { type Command } from '../../src/config/options.ts';
import { resolveSupervisorConfig } from '../../src/config/supervisor.ts';
import { GRACE_MARGIN_MS } from '../../src/config/grace-rule.ts';
import { type EnvVar, type KubeObject, kubeletEnv, rendered, theDeployment } from './support/manifests.ts';

const VERSION = (JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }).version;
const IMAGE = `ghcr.io/drainguard/drainguard:${VERSION}`;
const LAUNCHER = '/drainguard/drainguard';
const DEFAULT_SOCKET = '/run/drainguard/drain.sock';

interface Container {
  name: string;
  image?: string;
  command?: string[];
  env?: EnvVar[];
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
  securityContext?: Record<string, any>;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  restartPolicy?: string;
  lifecycle?: { preStop?: { exec?: { command: string[] } } };
}

const podOf = (d: KubeObject) => d.spec.template.spec as { containers: Container[]; initContainers?: Container[]; volumes: any[]; terminationGracePeriodSeconds?: number; securityContext?: any };
const all = (d: KubeObject): Container[] => [...(podOf(d).initContainers ?? []), ...podOf(d).containers];
const find = (list: Container[] | undefined, name: string): Container => {
  const c = (list ?? []).find((x) => x.name === name);
  assert.ok(c, `no container ${name}`);
  return c;
};
const mountOf = (c: Container, path: string) => (c.volumeMounts ?? []).find((m) => m.mountPath === path);
const envOf = (c: Container, name: string) => (c.env ?? []).find((e) => e.name === name);

const MODES: { mode: string; supervisor: (d: KubeObject) => Container; command: Command }[] = [
  { mode: 'wrap', supervisor: (d) => find(podOf(d).containers, 'manager'), command: 'run' },
  { mode: 'native-sidecar', supervisor: (d) => find(podOf(d).initContainers, 'drainguard'), command: 'sidecar' },
  { mode: 'sidecar', supervisor: (d) => find(podOf(d).containers, 'drainguard'), command: 'sidecar' },
];

for (const { mode, supervisor, command } of MODES) {
  const deployment = theDeployment(rendered(mode));
  const pod = podOf(deployment);
  const manager = find(pod.containers, 'manager');
  const install = find(pod.initContainers, 'drainguard-install');
  const dg = supervisor(deployment);

  test(`${mode}: drainguard runs where the mode puts it`, () => {
    if (mode === 'wrap') {
      assert.equal(manager.command, [LAUNCHER, 'run', '--', '/manager']);
    } else {
      assert.equal(dg.command, [LAUNCHER, 'sidecar']);
      assert.equal(manager.lifecycle?.preStop?.exec?.command, [LAUNCHER, 'prestop']);
      assert.equal(dg.restartPolicy, mode === 'native-sidecar' ? 'Always' : undefined);
      if (mode === 'native-sidecar') assert.ok(pod.initContainers!.indexOf(dg) >= 0, 'a native sidecar is an init container');
    }
    // The operator's own args are passed on unchanged.
    assert.equal((manager as any).args, ['--leader-elect', '--health-probe-bind-address=:8081']);
  });

  test(`${mode}: the launcher the operator container runs is the one install copied in`, () => {
    assert.equal(install.command, [LAUNCHER, 'install', '/shared']);
    const written = mountOf(install, '/shared')!;
    assert.ok(written && !written.readOnly);
    const used = mountOf(manager, '/drainguard');
    assert.ok(used, 'the operator container mounts the installed copy at /drainguard');
    assert.equal(used.name, written.name);
    assert.equal(used.readOnly, true);
    const volume = pod.volumes.find((v) => v.name === written.name);
    assert.ok(volume?.emptyDir, 'an emptyDir');
  });

  test(`${mode}: the drain socket is on a volume both ends mount`, () => {
    const socket = envOf(dg, 'DRAINGUARD_SOCKET')?.value ?? DEFAULT_SOCKET;
    const dir = socket.slice(0, socket.lastIndexOf('/'));
    assert.equal(envOf(manager, 'DRAINGUARD_SOCKET')?.value, socket, "the operator's client finds the socket");
    const here = mountOf(dg, dir);
    const there = mountOf(manager, dir);
    assert.ok(here && there, `both mount ${dir}`);
    assert.equal(here.name, there.name);
    assert.equal(pod.volumes.find((v) => v.name === here.name)?.emptyDir?.medium, 'Memory');
  });

  test(`${mode}: every drainguard container is non-root, read-only, unprivileged, with requests and limits`, () => {
    const ours = all(deployment).filter((c) => c.image?.startsWith('ghcr.io/drainguard/'));
    assert.ok(ours.length >= 1);
    for (const c of ours) {
      assert.equal(c.image, IMAGE, `${c.name}: the image of this version`);
      const s = c.securityContext ?? {};
      assert.equal(s.runAsNonRoot, true, `${c.name} runAsNonRoot`);
      assert.ok(s.runAsUser > 0, `${c.name} runAsUser`);
      assert.equal(s.readOnlyRootFilesystem, true, `${c.name} readOnlyRootFilesystem`);
      assert.equal(s.allowPrivilegeEscalation, false, `${c.name} allowPrivilegeEscalation`);
      assert.equal(s.capabilities, { drop: ['ALL'] }, `${c.name} capabilities`);
      assert.equal(s.seccompProfile, { type: 'RuntimeDefault' }, `${c.name} seccompProfile`);
      for (const kind of ['requests', 'limits'] as const) {
        assert.ok(c.resources?.[kind]?.cpu && c.resources[kind].memory, `${c.name} ${kind} for cpu and memory`);
      }
    }
  });

  test(`${mode}: the downward API variables, and an environment drainguard ${command} accepts`, () => {
    assert.equal(envOf(dg, 'DRAINGUARD_POD_NAME')?.valueFrom?.fieldRef?.fieldPath, 'metadata.name');
    assert.equal(envOf(dg, 'DRAINGUARD_POD_NAMESPACE')?.valueFrom?.fieldRef?.fieldPath, 'metadata.namespace');
    assert.equal(envOf(dg, 'DRAINGUARD_POD_UID')?.valueFrom?.fieldRef?.fieldPath, 'metadata.uid');
    const env = kubeletEnv(dg.env, { name: 'example-operator-7d9f8-x2x4q', namespace: deployment.metadata.namespace!, uid: '0b5e6f3e-8d21-4c7c-9a53-1f0c2d3e4f50' });
    // The grace period drainguard reads from its Pod.
    env.DRAINGUARD_GRACE_PERIOD = String(pod.terminationGracePeriodSeconds);
    const config = resolveSupervisorConfig(parseArgs(command, [], env));
    assert.equal(config.guard.length, 7);
    assert.equal(config.pod.namespace, deployment.metadata.namespace);
  });

  test(`${mode}: the grace period leaves a drain budget of at least 30s after the stop timeout`, () => {
    const env = kubeletEnv(dg.env, { name: 'p', namespace: 'n', uid: 'u' });
    env.DRAINGUARD_GRACE_PERIOD = String(pod.terminationGracePeriodSeconds);
    const config = resolveSupervisorConfig(parseArgs(command, [], env));
    assert.equal(config.gracePeriodMs, pod.terminationGracePeriodSeconds! * 1000);
    assert.ok(config.drainTimeoutMs >= 30_000, `drain timeout ${config.drainTimeoutMs} ms`);
    assert.ok(config.drainTimeoutMs + config.stopTimeoutMs + GRACE_MARGIN_MS <= config.gracePeriodMs);
  });
}

test.run();
