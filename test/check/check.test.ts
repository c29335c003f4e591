// `drainguard check`, the built executable, on what users feed it: the
// kustomize renders and the helm renders are clean (exit 0); each broken
// variant of them (one mistake made in the parsed objects) gets exactly the
// finding for that mistake, with its fix (exit 1); input it cannot read is
// exit 2.

import { spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { stringify } from 'yaml';
import { type KubeObject, parseObjects, render, rendered, theDeployment } from '../deploy/support/manifests.ts';
import { LIMIT_FLOOR_MIB, MEASURED_MIB, OPERATOR_MEMORY_FLOOR_MIB, WRAP_MEMORY_MIB, quantityBytes } from '../../src/check/memory.ts';
import { EXAMPLE, MODES, cleanupCharts, stageChart, templateText } from '../helm/support/charts.ts';
import { EXE, tempDir } from '../support/proc.ts';

interface Finding {
  code: string;
  severity: string;
  object: string;
  message: string;
  fix: string;
}
interface Result {
  status: number | null;
  stdout: string;
  stderr: string;
  findings: Finding[];
}

const dir = tempDir();
test.after(() => {
  rmSync(dir, { recursive: true, force: true });
  cleanupCharts();
});

function check(args: string[], input?: string): Result {
  const r = spawnSync(EXE, ['check', ...args], { input, encoding: 'utf8', timeout: 30_000 });
  const json = args.includes('json') && r.status !== 2 ? (JSON.parse(r.stdout) as { findings: Finding[] }) : { findings: [] };
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, findings: json.findings };
}
const checkObjects = (objects: KubeObject[]) => check(['-o', 'json', '-'], objects.map((o) => stringify(o)).join('---\n'));

const copy = (mode: string): KubeObject[] => structuredClone(rendered(mode));
const podOf = (objects: KubeObject[]) => theDeployment(objects).spec.template.spec;
const container = (objects: KubeObject[], name: string) =>
  [...podOf(objects).containers, ...(podOf(objects).initContainers ?? [])].find((c: any) => c.name === name);
const DEPLOYMENT = 'Deployment/example-system/example-operator';

/** Exactly one finding, CODE on the Deployment (OBJECT), whose fix contains FIX. */
function onlyFinding(r: Result, code: string, fix: string, severity = 'error', object = DEPLOYMENT): void {
  assert.equal(r.status, 1, r.stdout + r.stderr);
  assert.equal(
    r.findings.map((f) => f.code),
    [code],
  );
  const [f] = r.findings;
  assert.equal([f!.severity, f!.object], [severity, object]);
  assert.ok(f!.fix.includes(fix), `fix ${JSON.stringify(f!.fix)} should contain ${JSON.stringify(fix)}`);
  assert.ok(f!.message.length > 20);
}

test('the kustomize renders are clean: files, the directory, standard input', () => {
  for (const mode of MODES) {
    const r = check([`deploy/rendered/${mode}.yaml`]);
    assert.equal([r.status, r.stdout.split('\n').at(-2)], [0, 'checked 11 object(s): no findings'], r.stdout);
    // Before it, which layer covers which uninstall: the guard alone here.
    assert.match(r.stdout, /^kubectl delete -f \/ -k, Flux prune +off +off +yes +no$/m);
  }
  assert.equal(check(['-o', 'json', 'deploy/rendered']).findings, []);
  assert.equal(check(['-o', 'json', 'deploy/rendered']).status, 0);
  for (const mode of MODES) assert.equal(checkObjects(render(`deploy/examples/${mode}`)).status, 0);
});

test('the helm renders of the example operator are clean in every mode, hooks and all: helm template | drainguard check -', () => {
  const chart = stageChart(EXAMPLE);
  for (const mode of MODES) {
    const text = templateText(chart, { namespace: 'operator-system', set: { 'drainguard.mode': mode } });
    // Wrap mode needs the chart to raise the operator container's memory limit by drainguard's need.
    const limit = quantityBytes(
      theDeployment(parseObjects(text)).spec.template.spec.containers.find((c: any) => c.name === 'manager').resources?.limits?.memory ??
        '0',
    );
    const expected =
      mode === 'wrap' && limit !== undefined && limit > 0 && limit < LIMIT_FLOOR_MIB.wrap * 2 ** 20 ? ['wrap-memory-too-low'] : [];
    const r = check(['-o', 'json', '-'], text);
    assert.equal([r.status, r.findings.map((f) => f.code)], [expected.length === 0 ? 0 : 1, expected], r.stdout);
  }
  // drainguard switched off: nothing runs it.
  const off = check(['-o', 'json', '-'], templateText(chart, { namespace: 'operator-system', set: { 'drainguard.enabled': false } }));
  assert.equal(
    [off.status, off.findings.map((f) => `${f.severity} ${f.code} ${f.object}`)],
    [1, ['warning no-drainguard Deployment/operator-system/example-operator']],
  );
});

test('grace-period-too-short: an explicit drain timeout that does not fit, and a grace period with no drain time', () => {
  const long = copy('native-sidecar');
  podOf(long).terminationGracePeriodSeconds = 30;
  container(long, 'drainguard').env.push({ name: 'DRAINGUARD_DRAIN_TIMEOUT', value: '25s' });
  onlyFinding(
    checkObjects(long),
    'grace-period-too-short',
    'set spec.template.spec.terminationGracePeriodSeconds to at least 32, or lower DRAINGUARD_DRAIN_TIMEOUT in container drainguard',
  );
  podOf(long).terminationGracePeriodSeconds = 32;
  assert.equal(checkObjects(long).status, 0);
  const short = copy('wrap');
  podOf(short).terminationGracePeriodSeconds = 6;
  onlyFinding(checkObjects(short), 'grace-period-too-short', 'set spec.template.spec.terminationGracePeriodSeconds to at least 8');
  // Kubebuilder's 10 s fits the defaults (3 s of drain).
  const kubebuilder = copy('wrap');
  podOf(kubebuilder).terminationGracePeriodSeconds = 10;
  assert.equal(checkObjects(kubebuilder).status, 0);
});

test("timeouts-refused: a drain timeout that fits the pod's grace period but not drainguard's own, which it checks at start", () => {
  const objects = copy('native-sidecar');
  podOf(objects).terminationGracePeriodSeconds = 60;
  const dg = container(objects, 'drainguard');
  dg.env.push({ name: 'DRAINGUARD_DRAIN_TIMEOUT', value: '40s' });
  onlyFinding(
    checkObjects(objects),
    'timeouts-refused',
    "set DRAINGUARD_GRACE_PERIOD=60s (the pod's terminationGracePeriodSeconds) in container drainguard",
  );
  // What the finding says: drainguard with that environment exits 2.
  const env = Object.fromEntries(
    dg.env.filter((e: any) => e.value !== undefined && e.name !== 'DRAINGUARD_GUARD').map((e: any) => [e.name, e.value]),
  );
  const start = spawnSync(EXE, ['sidecar'], { env: { PATH: process.env.PATH, ...env }, encoding: 'utf8', timeout: 30_000 });
  assert.equal(start.status, 2, start.stderr);
  assert.match(
    start.stderr,
    /DG_CONFIG_TIMEOUTS: DRAINGUARD_DRAIN_TIMEOUT: the drain timeout \(40s\) plus the stop timeout \(5s\) must fit in the grace period \(30s\)/,
  );
  dg.env.push({ name: 'DRAINGUARD_GRACE_PERIOD', value: '60s' });
  assert.equal(checkObjects(objects).status, 0);
});

test('the chart passes its grace period on once a timeout is set: helm template with a 40 s drain in 60 s is clean', () => {
  const chart = stageChart(EXAMPLE);
  const r = check(
    ['-o', 'json', '-'],
    templateText(chart, {
      namespace: 'operator-system',
      set: { 'drainguard.terminationGracePeriodSeconds': 60, 'drainguard.drainTimeoutSeconds': 40 },
    }),
  );
  assert.equal([r.status, r.findings], [0, []], r.stdout);
});

test('socket-not-shared: the operator mounts the socket volume elsewhere, or has no DRAINGUARD_SOCKET', () => {
  const elsewhere = copy('sidecar');
  container(elsewhere, 'manager').volumeMounts.find((m: any) => m.name === 'drainguard-socket').mountPath = '/var/run/drainguard';
  onlyFinding(
    checkObjects(elsewhere),
    'socket-not-shared',
    'mount one emptyDir (medium: Memory) at /run/drainguard in both containers drainguard and manager',
  );
  const unset = copy('native-sidecar');
  container(unset, 'manager').env = container(unset, 'manager').env.filter((e: any) => e.name !== 'DRAINGUARD_SOCKET');
  onlyFinding(checkObjects(unset), 'socket-not-shared', 'set DRAINGUARD_SOCKET=/run/drainguard/drain.sock in container manager');
});

test('socket-not-on-volume: wrap mode on a read-only root filesystem with the default socket', () => {
  const objects = copy('wrap');
  container(objects, 'manager').env = container(objects, 'manager').env.filter((e: any) => e.name !== 'DRAINGUARD_SOCKET');
  onlyFinding(
    checkObjects(objects),
    'socket-not-on-volume',
    'mount an emptyDir (medium: Memory) at /run/drainguard in container manager and set DRAINGUARD_SOCKET=/run/drainguard/drain.sock',
  );
});

test('different-users: the sidecar and the operator run as different users (socket mode 0600)', () => {
  const objects = copy('sidecar');
  container(objects, 'manager').securityContext.runAsUser = 1000;
  onlyFinding(
    checkObjects(objects),
    'different-users',
    'the Helm library chart: drainguard.runAsUser: 1000 and drainguard.runAsGroup: 1000; the kustomize components: a patch of the Deployment setting securityContext: {runAsUser: 1000, runAsGroup: 1000} in container drainguard',
  );
});

test("release-unpinnable: drainguard's own RBAC may not delete itself and the ServiceAccount, so a kubectl delete of everything can leave a finalizer", () => {
  const objects = copy('wrap');
  assert.equal(checkObjects(objects).findings, [], 'the rendered component pins');
  for (const role of objects.filter((o) => (o.kind === 'ClusterRole' || o.kind === 'Role') && o.metadata.name.startsWith('drainguard:')))
    role.rules = role.rules.filter((r: any) => r.verbs.join() !== 'delete');
  onlyFinding(
    checkObjects(objects),
    'release-unpinnable',
    "grant delete on them, by resourceNames, in drainguard's own Role or ClusterRole and its binding " +
      '(deploy/components/rbac and the library chart do: docs/guard.md, "Nothing stuck, whatever deletes it")',
    'warning',
  );
  const { message } = checkObjects(objects).findings[0]!;
  for (const o of [
    'serviceaccount/example-system/example-operator',
    'clusterrole/drainguard:example-system:example-operator',
    'clusterrolebinding/drainguard:example-system:example-operator',
    'role/example-system/drainguard:example-system:example-operator',
    'rolebinding/example-system/drainguard:example-system:example-operator',
  ])
    assert.ok(message.includes(o), `${o} in: ${message}`);
});

test('guard-not-covered: the RBAC lacks a guarded name, or the Lease permissions', () => {
  const name = copy('wrap');
  const role = name.find((o) => o.kind === 'ClusterRole' && o.metadata.name.startsWith('drainguard:'))!;
  role.rules[0].resourceNames = role.rules[0].resourceNames.filter((n: string) => n !== 'example-operator');
  onlyFinding(checkObjects(name), 'guard-not-covered', 'resources: [clusterroles], verbs: [get, patch], resourceNames: [example-operator]');
  // The operator's own ClusterRole grants Leases and Events anywhere; Pods only drainguard's Role.
  const pods = copy('native-sidecar');
  const own = pods.find((o) => o.kind === 'Role')!;
  own.rules = own.rules.filter((r: any) => !r.resources.includes('pods'));
  const r = checkObjects(pods);
  onlyFinding(r, 'guard-not-covered', 'leases (coordination.k8s.io) create, list, patch, delete; events create; pods get');
  assert.match(r.findings[0]!.message, /may not get pods in example-system/);
});

test("release-unauthorised: drainguard's own RBAC not kept through the uninstall, or its ServiceAccount neither guarded nor kept", () => {
  const unkept = copy('wrap');
  for (const o of unkept.filter((x) => x.metadata.name.startsWith('drainguard:'))) delete o.metadata.annotations;
  const r = checkObjects(unkept);
  onlyFinding(
    r,
    'release-unauthorised',
    'annotated helm.sh/resource-policy: keep, and delete those after the uninstall with drainguard release --wait 2m --delete',
  );
  assert.match(
    r.findings[0]!.message,
    /may patch clusterrole\/example-operator, clusterrolebinding\/example-operator, serviceaccount\/example-system\/example-operator, .* only through roles and bindings the uninstall deletes/,
  );
  // The layout before: drainguard's rights in the operator's own guarded ClusterRole, deleted with it.
  const merged = copy('native-sidecar');
  const operator = merged.find((o) => o.kind === 'ClusterRole' && o.metadata.name === 'example-operator')!;
  const own = merged.find((o) => o.kind === 'ClusterRole' && o.metadata.name.startsWith('drainguard:'))!;
  operator.rules.push(...own.rules);
  own.rules = [];
  onlyFinding(checkObjects(merged), 'release-unauthorised', 'drainguard release --wait 2m --delete');
  const account = copy('sidecar');
  const guard = container(account, 'drainguard').env.find((e: any) => e.name === 'DRAINGUARD_GUARD');
  guard.value = guard.value
    .split(',')
    .filter((t: string) => !t.startsWith('serviceaccount/'))
    .join(',');
  onlyFinding(checkObjects(account), 'release-unauthorised', 'add serviceaccount/example-system/example-operator to DRAINGUARD_GUARD');
  account.find((o) => o.kind === 'ServiceAccount')!.metadata.annotations = { 'helm.sh/resource-policy': 'keep' };
  assert.equal(checkObjects(account).status, 0);
});

test('guarded-object-missing: the guard names an object the manifests lack', () => {
  const objects = copy('sidecar').filter((o) => !(o.kind === 'ClusterRoleBinding' && o.metadata.name === 'example-operator'));
  // The likely cause first (the render lost it), and the step that fixes it; changing the guard only after.
  onlyFinding(checkObjects(objects), 'guarded-object-missing', 'render clusterrolebinding/example-operator with the release');
  onlyFinding(checkObjects(objects), 'guarded-object-missing', 'only when the release does not create it');
});

test('prestop-missing: sidecar mode without the preStop hook', () => {
  for (const mode of ['sidecar', 'native-sidecar']) {
    const objects = copy(mode);
    delete container(objects, 'manager').lifecycle;
    onlyFinding(checkObjects(objects), 'prestop-missing', 'lifecycle: {preStop: {exec: {command: [/drainguard/drainguard, prestop]}}}');
    // The chart's own pause in the place of drainguard's hook.
    container(objects, 'manager').lifecycle = { preStop: { sleep: { seconds: 5 } } };
    onlyFinding(checkObjects(objects), 'prestop-missing', "make the preStop hook of container manager drainguard's alone");
    assert.match(
      checkObjects(objects).findings[0]!.message,
      /the preStop hook of container manager \(sleep\) does not run drainguard prestop/,
    );
  }
});

test('serviceaccount-token-expires: the ServiceAccount guarded with a drain longer than its tokens live', () => {
  const objects = copy('wrap');
  podOf(objects).terminationGracePeriodSeconds = 90;
  onlyFinding(checkObjects(objects), 'serviceaccount-token-expires', 'keep terminationGracePeriodSeconds at most 60', 'warning');
});

test('unsupported-architecture: a pod pinned to an architecture drainguard is not built for', () => {
  const objects = copy('native-sidecar');
  podOf(objects).nodeSelector = { 'kubernetes.io/arch': 's390x' };
  onlyFinding(checkObjects(objects), 'unsupported-architecture', 'schedule the pod on amd64 or arm64 nodes');
  podOf(objects).nodeSelector = { 'kubernetes.io/arch': 'arm64' };
  assert.equal(checkObjects(objects).status, 0);
});

test('pod-identity-missing and guard-invalid: a literal pod UID, a malformed guard list', () => {
  const literal = copy('wrap');
  const uid = container(literal, 'manager').env.find((e: any) => e.name === 'DRAINGUARD_POD_UID');
  delete uid.valueFrom;
  uid.value = '0b5e6f3e-8d21-4c7c-9a53-1f0c2d3e4f50';
  onlyFinding(
    checkObjects(literal),
    'pod-identity-missing',
    '{name: DRAINGUARD_POD_UID, valueFrom: {fieldRef: {fieldPath: metadata.uid}}}',
  );
  const malformed = copy('sidecar');
  container(malformed, 'drainguard').env.find((e: any) => e.name === 'DRAINGUARD_GUARD').value = 'clusterrole';
  onlyFinding(checkObjects(malformed), 'guard-invalid', 'comma-separated clusterrole/NAME');
});

test('idle-metrics-not-metrics-port: DRAINGUARD_IDLE_METRICS off the port the operator serves its metrics on', () => {
  const setUrl = (objects: KubeObject[], name: string, value: string) =>
    container(objects, name).env.push({ name: 'DRAINGUARD_IDLE_METRICS', value });
  // Wrap mode: the operator's flags follow `drainguard run --`; kubebuilder's secure metrics on :8443.
  const wrap = copy('wrap');
  container(wrap, 'manager').args.push('--metrics-bind-address=:8443');
  setUrl(wrap, 'manager', 'http://127.0.0.1:8080/metrics');
  onlyFinding(
    checkObjects(wrap),
    'idle-metrics-not-metrics-port',
    'set DRAINGUARD_IDLE_METRICS=http://127.0.0.1:8443/metrics in container manager',
  );
  container(wrap, 'manager').env.at(-1).value = 'https://127.0.0.1:8443/metrics';
  assert.equal(checkObjects(wrap).status, 0);
  // No port in the URL is port 80.
  container(wrap, 'manager').env.at(-1).value = 'http://localhost/metrics';
  assert.match(checkObjects(wrap).findings[0]!.message, /scrapes port 80 .*on port 8443/);
  // A sidecar, the operator's metrics off (Go's single-dash flag, value apart).
  const off = copy('sidecar');
  container(off, 'manager').args = [...(container(off, 'manager').args ?? []), '-metrics-bind-address', '0'];
  setUrl(off, 'drainguard', 'http://127.0.0.1:8080/metrics');
  onlyFinding(checkObjects(off), 'idle-metrics-not-metrics-port', 'or remove DRAINGUARD_IDLE_METRICS');
  // No flag: the container's port named for metrics.
  const ported = copy('native-sidecar');
  container(ported, 'manager').ports = [
    { name: 'metrics', containerPort: 8080 },
    { name: 'webhook', containerPort: 9443 },
  ];
  setUrl(ported, 'drainguard', 'http://127.0.0.1:9443/metrics');
  onlyFinding(
    checkObjects(ported),
    'idle-metrics-not-metrics-port',
    'set DRAINGUARD_IDLE_METRICS=http://127.0.0.1:8080/metrics in container drainguard',
  );
  container(ported, 'drainguard').env.at(-1).value = 'http://127.0.0.1:8080/metrics';
  assert.equal(checkObjects(ported).status, 0);
});

test('idle-metrics-not-this-pod: a host other than the pod itself', () => {
  const objects = copy('wrap');
  container(objects, 'manager').env.push({ name: 'DRAINGUARD_IDLE_METRICS', value: 'http://wrong:8080/metrics' });
  onlyFinding(
    checkObjects(objects),
    'idle-metrics-not-this-pod',
    'set DRAINGUARD_IDLE_METRICS=http://127.0.0.1:8080/metrics in container manager',
    'warning',
  );
  // The pod's own IP, from the downward API.
  container(objects, 'manager').env.splice(
    -1,
    1,
    { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
    { name: 'DRAINGUARD_IDLE_METRICS', value: 'http://$(POD_IP):8080/metrics' },
  );
  assert.equal(checkObjects(objects).status, 0, JSON.stringify(checkObjects(objects).findings));
});

/** What a render adds for guard ENTRIES: the entries in DRAINGUARD_GUARD, get and patch on them in drainguard's ClusterRole, and its admission policy's rules. */
function guardMore(objects: KubeObject[], supervisor: string, entries: string[]): void {
  const guard = container(objects, supervisor).env.find((e: any) => e.name === 'DRAINGUARD_GUARD');
  guard.value = [guard.value, ...entries].join(',');
  const own = objects.find((o) => o.kind === 'ClusterRole' && o.metadata.name.startsWith('drainguard:'))!;
  const policy = objects.find((o) => o.kind === 'ValidatingAdmissionPolicy')!;
  for (const entry of entries) {
    const [kind, ...rest] = entry.split('/');
    const resource = `${kind === 'serviceaccount' ? 'serviceaccount' : kind}s`;
    const group = kind === 'serviceaccount' ? '' : 'rbac.authorization.k8s.io';
    own.rules.push({ apiGroups: [group], resources: [resource], verbs: ['get', 'patch'], resourceNames: [rest.at(-1)] });
    policy.spec.matchConstraints.resourceRules.push({
      apiGroups: [group],
      apiVersions: ['*'],
      operations: ['UPDATE'],
      resources: [resource],
      resourceNames: [rest.at(-1)],
    });
  }
}
const binding = (
  kind: 'ClusterRoleBinding' | 'RoleBinding',
  name: string,
  role: { kind: string; name: string },
  namespace?: string,
): KubeObject => ({
  apiVersion: 'rbac.authorization.k8s.io/v1',
  kind,
  metadata: { name, ...(namespace ? { namespace } : {}) },
  roleRef: { apiGroup: 'rbac.authorization.k8s.io', ...role },
  subjects: [{ kind: 'ServiceAccount', name: 'example-operator', namespace: 'example-system' }],
});

test('binding-not-guarded: a ClusterRoleBinding to the built-in cluster-admin left out of the guard; cluster-admin itself is not expected', () => {
  for (const mode of MODES) {
    const objects = copy(mode);
    objects.push(binding('ClusterRoleBinding', 'example-operator-admin', { kind: 'ClusterRole', name: 'cluster-admin' }));
    onlyFinding(
      checkObjects(objects),
      'binding-not-guarded',
      `add clusterrolebinding/example-operator-admin to DRAINGUARD_GUARD in container ${mode === 'wrap' ? 'manager' : 'drainguard'}`,
    );
    assert.match(
      checkObjects(objects).findings[0]!.message,
      /ClusterRoleBinding example-operator-admin binds ServiceAccount example-system\/example-operator to ClusterRole cluster-admin/,
    );
    guardMore(objects, mode === 'wrap' ? 'manager' : 'drainguard', ['clusterrolebinding/example-operator-admin']);
    assert.equal(checkObjects(objects).findings, []);
  }
});

test('binding-not-guarded, role-not-guarded: a leader-election Role and RoleBinding in kube-system, expected with their own namespace', () => {
  const objects = copy('native-sidecar');
  objects.push(
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'example-leader', namespace: 'kube-system' },
      rules: [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'update'] }],
    },
    binding('RoleBinding', 'example-leader', { kind: 'Role', name: 'example-leader' }, 'kube-system'),
  );
  const r = checkObjects(objects);
  assert.equal([r.status, r.findings.map((f) => f.code)], [1, ['binding-not-guarded', 'role-not-guarded']], r.stdout);
  assert.match(r.findings[0]!.fix, 'add rolebinding/kube-system/example-leader to DRAINGUARD_GUARD in container drainguard');
  assert.match(r.findings[0]!.fix, 'drainguard.guard.roleBindings: [kube-system/example-leader]');
  assert.match(r.findings[1]!.fix, 'add role/kube-system/example-leader to DRAINGUARD_GUARD');
  guardMore(objects, 'drainguard', ['role/kube-system/example-leader', 'rolebinding/kube-system/example-leader']);
  assert.equal(checkObjects(objects).findings, []);
});

test('aggregation-source-not-guarded: the operator ClusterRole aggregates another, which the guard leaves out', () => {
  const objects = copy('sidecar');
  const operator = objects.find((o) => o.kind === 'ClusterRole' && o.metadata.name === 'example-operator')!;
  objects.push({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: 'example-operator-rules', labels: { 'example.io/aggregate-to-operator': 'true' } },
    rules: operator.rules,
  });
  operator.aggregationRule = { clusterRoleSelectors: [{ matchLabels: { 'example.io/aggregate-to-operator': 'true' } }] };
  operator.rules = [];
  onlyFinding(
    checkObjects(objects),
    'aggregation-source-not-guarded',
    'add clusterrole/example-operator-rules to DRAINGUARD_GUARD in container drainguard',
  );
  guardMore(objects, 'drainguard', ['clusterrole/example-operator-rules']);
  assert.equal(checkObjects(objects).findings, []);
});

test('several Deployments: each checked with its own ServiceAccount and guard; one that runs no drainguard beside one that does is reported', () => {
  const objects = copy('wrap');
  const second = structuredClone(
    objects.filter((o) => !o.kind.startsWith('Validating') && !o.metadata.name.startsWith('drainguard:') && o.kind !== 'Namespace'),
  ).map((o) => JSON.parse(JSON.stringify(o).replaceAll('example-operator', 'example-webhook')) as KubeObject);
  const webhook = theDeployment(second);
  // The webhook without drainguard: the manager's own command back.
  const manager = webhook.spec.template.spec.containers[0];
  manager.command = ['/webhook'];
  manager.env = [];
  const r = checkObjects([...objects, ...second]);
  assert.equal(
    [r.status, r.findings.map((f) => `${f.severity} ${f.code} ${f.object}`)],
    [1, ['warning no-drainguard Deployment/example-system/example-webhook']],
    r.stdout,
  );
  assert.match(
    r.findings[0]!.message,
    /its ServiceAccount is bound to roles as an operator's is and Deployment\/example-system\/example-operator runs it/,
  );
  // With drainguard (the first one's container, its names), but a binding of its own left out of its guard.
  const both = copy('wrap');
  const other = structuredClone(both)
    .map((o) => JSON.parse(JSON.stringify(o).replaceAll('example-operator', 'example-webhook')) as KubeObject)
    .filter((o) => o.kind !== 'Namespace');
  other.push(binding('ClusterRoleBinding', 'example-webhook-view', { kind: 'ClusterRole', name: 'view' }));
  other.at(-1)!.subjects[0].name = 'example-webhook';
  const r2 = checkObjects([...both, ...other]);
  assert.equal(
    r2.findings.map((f) => `${f.code} ${f.object}`),
    ['binding-not-guarded Deployment/example-system/example-webhook'],
    r2.stdout,
  );
});

test("wrap-command-missing, wrap-entrypoint-unknown: what the manifests show of a wrap whose command is not the image's", () => {
  const cases: [string[] | undefined, string[] | undefined, string | undefined][] = [
    // Nothing after `--`: drainguard exits 2.
    [['/drainguard/drainguard', 'run', '--'], ['--leader-elect'], 'wrap-command-missing'],
    // The chart ran a shell script in args on a shell entrypoint: /manager is not a shell.
    [['/drainguard/drainguard', 'run', '--', '/manager'], ['-c', 'exec /usr/local/bin/operator --leader-elect'], 'wrap-entrypoint-unknown'],
    [['/drainguard/drainguard', 'run', '--', '/manager'], ['--zap-devel', 'exec /op && true'], 'wrap-entrypoint-unknown'],
    // The container named no command and gave the whole command line in args (ko's /ko-app/...): /manager is given another program.
    [['/drainguard/drainguard', 'run', '--', '/manager'], ['/ko-app/operator', '--leader-elect'], 'wrap-entrypoint-unknown'],
    // The right ones: the shell and its script, the program and its flags, no `--` at all.
    [['/drainguard/drainguard', 'run', '--', '/bin/sh'], ['-c', 'exec /usr/local/bin/operator --leader-elect'], undefined],
    [['/drainguard/drainguard', 'run', '--', '/ko-app/operator'], ['--leader-elect'], undefined],
    [['/drainguard/drainguard', 'run', '--stop-timeout', '5s', '/manager'], ['--leader-elect'], undefined],
  ];
  for (const [command, args, code] of cases) {
    const objects = copy('wrap');
    Object.assign(container(objects, 'manager'), { command, args });
    const r = checkObjects(objects);
    if (code === undefined) {
      assert.equal(r.findings, [], `${command} ${args}: ${r.stdout}`);
      continue;
    }
    onlyFinding(
      r,
      code,
      'the Helm library chart: drainguard.operator.command; the kustomize components: data.command of the drainguard ConfigMap',
    );
  }
});

test("wrap-entrypoint-unknown: not raised by Kubernetes' $(VAR) or by /manager SUBCOMMAND, as operators ship them; raised by a script", () => {
  const downward = (name: string) => ({ name, valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } });
  const wrapped = (command: string, args: string[], env: object[] = []): KubeObject[] => {
    const objects = copy('wrap');
    const manager = container(objects, 'manager');
    Object.assign(manager, { command: ['/drainguard/drainguard', 'run', '--', command], args, env: [...manager.env, ...env] });
    return objects;
  };
  // fluxcd's kustomize-controller: the image's ENTRYPOINT is the program; the namespace in flags from $(RUNTIME_NAMESPACE).
  const flux = wrapped(
    'kustomize-controller',
    [
      '--events-addr=http://notification-controller.$(RUNTIME_NAMESPACE).svc.cluster.local./',
      '--watch-all-namespaces=true',
      '--log-level=info',
      '--log-encoding=json',
      '--enable-leader-election',
    ],
    [downward('RUNTIME_NAMESPACE')],
  );
  // An operator-sdk operator that watches its own namespace.
  const sdk = wrapped('/manager', ['--leader-elect', '--watch-namespace=$(POD_NAMESPACE)'], [downward('POD_NAMESPACE')]);
  // CloudNativePG: /manager with its `controller` subcommand.
  const cnpg = wrapped(
    '/manager',
    [
      'controller',
      '--leader-elect',
      '--max-concurrent-reconciles=10',
      '--config-map-name=cnpg-controller-manager-config',
      '--webhook-port=9443',
    ],
    [downward('OPERATOR_NAMESPACE'), { name: 'MONITORING_QUERIES_CONFIGMAP', value: 'cnpg-default-monitoring' }],
  );
  for (const [name, objects] of [
    ['flux', flux],
    ['operator-sdk', sdk],
    ['cnpg', cnpg],
  ] as const) {
    const r = checkObjects(objects);
    assert.equal([r.status, r.findings], [0, []], `${name}: ${r.stdout}`);
  }
  // The broken ones beside them: a script, $(VAR) the container does not set, another program's command line.
  const fix = 'the Helm library chart: drainguard.operator.command; the kustomize components: data.command of the drainguard ConfigMap';
  onlyFinding(
    checkObjects(wrapped('/manager', ['--watch-namespace=$(cat /var/run/secrets/kubernetes.io/serviceaccount/namespace)'])),
    'wrap-entrypoint-unknown',
    fix,
  );
  const undeclared = checkObjects(wrapped('/manager', ['--leader-elect', '--watch-namespace=$(POD_NAMESPACE)']));
  onlyFinding(undeclared, 'wrap-entrypoint-unknown', fix);
  assert.match(undeclared.findings[0]!.message, /add POD_NAMESPACE to the container's env/);
  onlyFinding(checkObjects(wrapped('/manager', ['tini', '--', '/manager', 'controller'])), 'wrap-entrypoint-unknown', fix);
});

test("token-not-mounted: automountServiceAccountToken false on the pod or its ServiceAccount, and no projected token in drainguard's container", () => {
  for (const mode of MODES) {
    const supervisor = mode === 'wrap' ? 'manager' : 'drainguard';
    const objects = copy(mode);
    podOf(objects).automountServiceAccountToken = false;
    onlyFinding(
      checkObjects(objects),
      'token-not-mounted',
      `mount in container ${supervisor} a projected volume at /var/run/secrets/kubernetes.io/serviceaccount with a serviceAccountToken`,
    );
    podOf(objects).volumes.push({
      name: 'drainguard-token',
      projected: {
        sources: [
          { serviceAccountToken: { path: 'token' } },
          { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
        ],
      },
    });
    container(objects, supervisor).volumeMounts.push({
      name: 'drainguard-token',
      mountPath: '/var/run/secrets/kubernetes.io/serviceaccount',
      readOnly: true,
    });
    assert.equal(checkObjects(objects).findings, []);
  }
  // The ServiceAccount says false, the pod nothing.
  const objects = copy('native-sidecar');
  objects.find((o) => o.kind === 'ServiceAccount')!.automountServiceAccountToken = false;
  onlyFinding(checkObjects(objects), 'token-not-mounted', 'or let the pod mount its token');
  assert.match(
    checkObjects(objects).findings[0]!.message,
    /its ServiceAccount example-system\/example-operator says automountServiceAccountToken: false/,
  );
  podOf(objects).automountServiceAccountToken = true;
  assert.equal(checkObjects(objects).findings, []);
});

test("hook-invalid: a preStop with drainguard's exec and the chart's own sleep, which the API server refuses", () => {
  for (const mode of ['sidecar', 'native-sidecar']) {
    const objects = copy(mode);
    container(objects, 'manager').lifecycle.preStop.sleep = { seconds: 5 };
    onlyFinding(
      checkObjects(objects),
      'hook-invalid',
      "keep one action in the preStop hook of container manager: drainguard's exec [/drainguard/drainguard, prestop]",
    );
    assert.match(checkObjects(objects).findings[0]!.message, /holds exec and sleep: a handler takes exactly one action/);
  }
});

test("the graces: a liveness probe's own grace that leaves no drain, a budget longer than the Pod's, a preStop that eats the grace", () => {
  // The rendered wrap Deployment (60 s) is clean; its manager has a liveness probe without a grace of its own.
  const objects = copy('wrap');
  const manager = container(objects, 'manager');
  manager.livenessProbe.terminationGracePeriodSeconds = 20;
  assert.equal(checkObjects(objects).findings, [], 'a probe grace with room to drain');
  manager.livenessProbe.terminationGracePeriodSeconds = 3;
  onlyFinding(
    checkObjects(objects),
    'probe-grace-no-drain',
    "raise the livenessProbe's terminationGracePeriodSeconds of container manager to at least 8",
    'warning',
  );
  delete manager.livenessProbe.terminationGracePeriodSeconds;
  manager.env.push({ name: 'DRAINGUARD_NODE_SHUTDOWN_GRACE', value: '90s' });
  onlyFinding(checkObjects(objects), 'node-shutdown-grace-too-long', 'at most 60s', 'warning');
  manager.env.at(-1).value = '20s';
  assert.equal(checkObjects(objects).findings, []);
  manager.lifecycle = { preStop: { sleep: { seconds: 55 } } };
  onlyFinding(checkObjects(objects), 'prestop-eats-grace', 'raise terminationGracePeriodSeconds to at least 63');
  manager.lifecycle.preStop.sleep.seconds = 5;
  onlyFinding(checkObjects(objects), 'prestop-eats-grace', 'set DRAINGUARD_GRACE_PERIOD in container manager', 'warning');
  manager.env.push({ name: 'DRAINGUARD_GRACE_PERIOD', value: '55s' });
  assert.equal(checkObjects(objects).findings, [], 'told what the hook leaves');
});

test('stop-signal-needs-os: a lifecycle.stopSignal without spec.os.name, which the API server refuses (with the gate on) or drops', () => {
  const objects = copy('wrap');
  container(objects, 'manager').lifecycle = { stopSignal: 'SIGQUIT' };
  onlyFinding(checkObjects(objects), 'stop-signal-needs-os', 'set spec.template.spec.os.name: linux');
  assert.match(checkObjects(objects).findings[0]!.message, /may not be set for containers with empty `spec.os.name`/);
  // With it, SIGQUIT is fine: this drainguard reads its Pod (name, namespace, get on pods), so it drains on it.
  podOf(objects).os = { name: 'linux' };
  assert.equal(checkObjects(objects).findings, []);
});

test('stop-signal-not-drained: a stop signal drainguard cannot catch, in every mode', () => {
  for (const [mode, name] of [
    ['wrap', 'manager'],
    ['native-sidecar', 'drainguard'],
  ]) {
    const objects = copy(mode!);
    podOf(objects).os = { name: 'linux' };
    container(objects, name!).lifecycle = { ...container(objects, name!).lifecycle, stopSignal: 'SIGKILL' };
    onlyFinding(checkObjects(objects), 'stop-signal-not-drained', `set lifecycle.stopSignal of container ${name} to SIGTERM, or remove it`);
    assert.match(checkObjects(objects).findings[0]!.message, /SIGKILL: it cannot be caught: the kernel kills drainguard/);
    container(objects, name!).lifecycle.stopSignal = 'SIGRTMIN+1';
    onlyFinding(checkObjects(objects), 'stop-signal-not-drained', `set lifecycle.stopSignal of container ${name} to SIGTERM`);
    assert.match(checkObjects(objects).findings[0]!.message, /drainguard does not catch it: its default action ends drainguard at once/);
  }
});

test('stop-signal-not-drained: SIGQUIT where drainguard cannot read its Pod; DRAINGUARD_DRAIN_SIGNALS names it instead', () => {
  // Wrap mode with no guard: nothing made the pod's identity necessary.
  const wrapped = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'op', namespace: 'ops' },
    spec: {
      selector: { matchLabels: { app: 'op' } },
      template: {
        metadata: { labels: { app: 'op' } },
        spec: {
          os: { name: 'linux' },
          containers: [
            {
              name: 'manager',
              image: 'example.com/op:1',
              command: ['/drainguard/drainguard', 'run', '--', '/manager'],
              lifecycle: { stopSignal: 'SIGQUIT' },
            },
          ],
        },
      },
    },
  } as KubeObject;
  onlyFinding(
    checkObjects([wrapped]),
    'stop-signal-not-drained',
    'add SIGQUIT to DRAINGUARD_DRAIN_SIGNALS in container manager, which needs no API; or set DRAINGUARD_POD_NAME and DRAINGUARD_POD_NAMESPACE',
    'error',
    'Deployment/ops/op',
  );
  assert.match(checkObjects([wrapped]).findings[0]!.message, /drainguard only passes it on: the operator gets it with no drain first/);
  wrapped.spec.template.spec.containers[0].env = [{ name: 'DRAINGUARD_DRAIN_SIGNALS', value: 'QUIT' }];
  assert.equal(checkObjects([wrapped]).findings, []);
  // The pod's identity, but no get on pods in these manifests.
  wrapped.spec.template.spec.containers[0].env = [
    { name: 'DRAINGUARD_POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    { name: 'DRAINGUARD_POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
  ];
  onlyFinding(
    checkObjects([wrapped]),
    'stop-signal-not-drained',
    'or grant ServiceAccount ops/default get on pods in ops',
    'error',
    'Deployment/ops/op',
  );
});

test('drain-signals-invalid: a DRAINGUARD_DRAIN_SIGNALS drainguard refuses at start', () => {
  const objects = copy('wrap');
  container(objects, 'manager').env.push({ name: 'DRAINGUARD_DRAIN_SIGNALS', value: 'SIGQUIT,SIGKILL' });
  onlyFinding(checkObjects(objects), 'drain-signals-invalid', 'write DRAINGUARD_DRAIN_SIGNALS as signal names separated by commas');
  assert.match(
    checkObjects(objects).findings[0]!.message,
    /DRAINGUARD_DRAIN_SIGNALS in container manager: expected signals drainguard can catch \(SIGKILL cannot be caught\)/,
  );
});

test("wrap-memory-too-low: the operator container's memory limit not raised for drainguard in wrap mode; the sidecars have their own", () => {
  const objects = copy('wrap');
  container(objects, 'manager').resources.limits.memory = '128Mi';
  onlyFinding(
    checkObjects(objects),
    'wrap-memory-too-low',
    `raise the memory request of container manager by ${WRAP_MEMORY_MIB.request}Mi and its limit by ${WRAP_MEMORY_MIB.limit}Mi ` +
      `(to at least ${128 + WRAP_MEMORY_MIB.limit}Mi here)`,
    'warning',
  );
  assert.match(checkObjects(objects).findings[0]!.message, `drainguard was measured at up to ${MEASURED_MIB.containerMax} MiB`);
  // What drainguard was measured at beside the operator's floor is enough; a MiB less is not.
  const enough = LIMIT_FLOOR_MIB.wrap;
  assert.is(enough, Math.ceil(MEASURED_MIB.containerMax + OPERATOR_MEMORY_FLOOR_MIB));
  container(objects, 'manager').resources.limits.memory = `${enough}Mi`;
  assert.equal(checkObjects(objects).findings, []);
  container(objects, 'manager').resources.limits.memory = `${enough - 1}Mi`;
  assert.equal(
    checkObjects(objects).findings.map((f) => f.code),
    ['wrap-memory-too-low'],
  );
  container(objects, 'manager').resources.limits.memory = '1Gi';
  assert.equal(checkObjects(objects).findings, []);
  const sidecar = copy('native-sidecar');
  container(sidecar, 'manager').resources.limits.memory = '128Mi';
  assert.equal(checkObjects(sidecar).findings, []);
});

test("sidecar-memory-too-low: drainguard's own container limited below what it was measured at, in both sidecar modes", () => {
  for (const mode of ['native-sidecar', 'sidecar']) {
    const objects = copy(mode);
    assert.equal(
      container(objects, 'drainguard').resources.limits.memory,
      `${WRAP_MEMORY_MIB.limit}Mi`,
      'the component ships the sized limit',
    );
    container(objects, 'drainguard').resources.limits.memory = `${LIMIT_FLOOR_MIB.sidecar - 1}Mi`;
    onlyFinding(checkObjects(objects), 'sidecar-memory-too-low', `a memory limit of at least ${WRAP_MEMORY_MIB.limit}Mi`, 'warning');
    container(objects, 'drainguard').resources.limits.memory = `${LIMIT_FLOOR_MIB.sidecar}Mi`;
    assert.equal(checkObjects(objects).findings, [], mode);
    // No limit at all: nothing to be below.
    delete container(objects, 'drainguard').resources.limits.memory;
    assert.equal(checkObjects(objects).findings, [], mode);
  }
});

interface LayersRow {
  way: string;
  hook: string;
  hold: string;
  guard: string;
  finalized: boolean;
}
const layersOf = (r: Result): Record<string, string> =>
  Object.fromEntries(
    (JSON.parse(r.stdout) as { layers: LayersRow[] }).layers.map((l) => [
      l.way,
      `${l.hook} ${l.hold} ${l.guard} ${l.finalized ? 'finalized' : 'stuck'}`,
    ]),
  );

test('layers: the hold example covers kubectl and Flux, not Argo CD (foreground) nor a namespace deletion; without the hold, only the guard', () => {
  const held = check(['-o', 'json', 'deploy/rendered/hold.yaml']);
  assert.equal([held.status, held.findings], [0, []], held.stdout);
  assert.equal(layersOf(held), {
    'helm uninstall': 'off yes yes finalized',
    'helm uninstall --no-hooks': 'off yes yes finalized',
    'kubectl delete -f / -k, Flux prune': 'off yes yes finalized',
    'Argo CD prune': 'off no yes stuck',
    'namespace deletion': 'off no yes stuck',
  });
  const plain = check(['-o', 'json', 'deploy/rendered/native-sidecar.yaml']);
  assert.equal(Object.values(layersOf(plain)), Array(5).fill('off off yes stuck'));
});

test("layers: the example chart's pre-delete hook covers helm uninstall alone; with hold.kinds the hold covers the rest but Argo CD and the namespace", () => {
  const chart = stageChart(EXAMPLE);
  const hookOnly = check(['-o', 'json', '-'], templateText(chart, { namespace: 'operator-system' }));
  assert.equal(hookOnly.findings, []);
  assert.equal(layersOf(hookOnly)['helm uninstall'], 'yes off yes finalized');
  assert.equal(layersOf(hookOnly)['helm uninstall --no-hooks'], 'no off yes stuck');
  const both = check(
    ['-o', 'json', '-'],
    templateText(chart, {
      namespace: 'operator-system',
      set: { 'drainguard.hold.kinds': ['installations.operator.example.io', 'apiservers.operator.example.io'] },
    }),
  );
  assert.equal(both.findings, [], both.stdout);
  assert.equal(layersOf(both), {
    'helm uninstall': 'yes yes yes finalized',
    'helm uninstall --no-hooks': 'no yes yes finalized',
    'kubectl delete -f / -k, Flux prune': 'no yes yes finalized',
    'Argo CD prune': 'no no yes stuck',
    'namespace deletion': 'no no yes stuck',
  });
});

const holdCopy = () => copy('hold');
const HELD = 'Deployment/example-hold/example-operator';
const drainguardRole = (objects: KubeObject[]) => objects.find((o) => o.kind === 'Role' && o.metadata.name.startsWith('drainguard:'))!;

test("hold-not-covered: the Role without the hold's rules, or the ClusterRole without the kinds' group", () => {
  const noRole = holdCopy();
  drainguardRole(noRole).rules = drainguardRole(noRole).rules.filter((r: any) => !r.apiGroups.includes('apps'));
  onlyFinding(
    checkObjects(noRole),
    'hold-not-covered',
    '{apiGroups: [apps], resources: [deployments], verbs: [get, list, watch, patch], resourceNames: [example-operator]}',
    'error',
    HELD,
  );
  assert.match(
    checkObjects(noRole).findings[0]!.message,
    /may not get replicasets.apps in example-hold, get deployments.apps\/example-operator in example-hold/,
  );
  const noKinds = holdCopy();
  // The operator's own ClusterRole, bound to the same ServiceAccount, grants the kinds too: without both.
  for (const cr of noKinds.filter((o) => o.kind === 'ClusterRole'))
    cr.rules = cr.rules.filter((r: any) => !r.apiGroups.includes('operator.example.io'));
  const r = checkObjects(noKinds);
  assert.equal(
    r.findings.map((f) => f.code),
    ['hold-not-covered'],
  );
  assert.match(r.findings[0]!.message, /list installations.operator.example.io cluster-wide, list apiservers/);
});

test("hold-not-covered goes by the CRD's scope: a namespaced kind may be listed through a Role in the operator's namespace", () => {
  const objects = holdCopy();
  for (const crd of objects.filter((o) => o.kind === 'CustomResourceDefinition')) crd.spec.scope = 'Namespaced';
  const cr = objects.find((o) => o.kind === 'ClusterRole' && o.metadata.name.startsWith('drainguard:'))!;
  const rule = cr.rules.find((r: any) => r.apiGroups.includes('operator.example.io'));
  // The operator's own ClusterRole, bound to the same ServiceAccount, grants the kinds too: without both.
  for (const c of objects.filter((o) => o.kind === 'ClusterRole'))
    c.rules = c.rules.filter((r: any) => !r.apiGroups.includes('operator.example.io'));
  const r = checkObjects(objects);
  assert.equal(
    r.findings.map((f) => f.code),
    ['hold-not-covered'],
  );
  assert.match(r.findings[0]!.message, /list installations.operator.example.io in example-hold/);
  drainguardRole(objects).rules.push(rule);
  assert.equal(checkObjects(objects).findings, []);
});

test('hold-kind-missing: a listed kind no CRD in the manifests defines (a warning: CRDs may be installed apart)', () => {
  const objects = holdCopy().filter(
    (o) => !(o.kind === 'CustomResourceDefinition' && o.metadata.name === 'apiservers.operator.example.io'),
  );
  onlyFinding(checkObjects(objects), 'hold-kind-missing', 'PLURAL.GROUP of the CRD', 'warning', HELD);
  assert.match(checkObjects(objects).findings[0]!.message, /the hold lists apiservers.operator.example.io/);
});

test('hold-needs-deployment, hold-invalid: the hold in a StatefulSet; an entry that is not PLURAL.GROUP', () => {
  const stateful = holdCopy();
  theDeployment(stateful).kind = 'StatefulSet';
  const r = checkObjects(stateful);
  assert.equal(
    [r.status, r.findings.map((f) => `${f.code} ${f.object}`)],
    [1, ['hold-needs-deployment StatefulSet/example-hold/example-operator']],
  );
  assert.match(r.findings[0]!.message, /runs in a StatefulSet, not a Deployment/);
  const malformed = holdCopy();
  container(malformed, 'drainguard').env.find((e: any) => e.name === 'DRAINGUARD_HOLD').value =
    'installations.operator.example.io,Installation';
  onlyFinding(checkObjects(malformed), 'hold-invalid', 'comma-separated PLURAL.GROUP', 'error', HELD);
});

test('the hold without the guard still needs the pod identity and the Lease and Events RBAC', () => {
  const objects = holdCopy();
  const dg = container(objects, 'drainguard');
  dg.env.find((e: any) => e.name === 'DRAINGUARD_GUARD').value = '';
  dg.env = dg.env.filter((e: any) => e.name !== 'DRAINGUARD_POD_UID');
  onlyFinding(
    checkObjects(objects),
    'pod-identity-missing',
    '{name: DRAINGUARD_POD_UID, valueFrom: {fieldRef: {fieldPath: metadata.uid}}}',
    'error',
    HELD,
  );
  assert.match(checkObjects(objects).findings[0]!.message, /holds its Deployment but does not get DRAINGUARD_POD_UID/);
  dg.env.push({ name: 'DRAINGUARD_POD_UID', valueFrom: { fieldRef: { fieldPath: 'metadata.uid' } } });
  assert.equal(checkObjects(objects).findings, []);
  // Leases taken from drainguard's Role and from the operator's ClusterRole (which grants them everywhere).
  for (const role of objects.filter((o) => o.kind.endsWith('Role')))
    role.rules = role.rules.filter((r: any) => !r.resources.includes('leases'));
  onlyFinding(checkObjects(objects), 'guard-not-covered', 'leases (coordination.k8s.io) create, list, patch, delete', 'error', HELD);
});

test('text output: each finding with its fix, and a summary', () => {
  const objects = copy('sidecar');
  delete container(objects, 'manager').lifecycle;
  const r = check(['-'], objects.map((o) => stringify(o)).join('---\n'));
  assert.equal(r.status, 1);
  assert.match(r.stdout, /^error prestop-missing: Deployment\/example-system\/example-operator\n {2}container manager has no preStop hook/);
  assert.match(r.stdout, /\n {2}fix: make the preStop hook of container manager drainguard's alone: lifecycle:/);
  assert.match(r.stdout, /checked 11 object\(s\): 1 error\(s\), 0 warning\(s\)\n$/);
});

test('bad input is exit 2, naming what was wrong', () => {
  const cases: [string[], string | undefined, RegExp][] = [
    [[], undefined, /name the manifests to check/],
    [[join(dir, 'missing.yaml')], undefined, /missing\.yaml: cannot read \(ENOENT\)/],
    [['-'], 'kind: Deployment\n  bad: [indent\n', /<stdin>:\d+: not YAML/],
    [['-'], '- just\n- a list\n', /not a Kubernetes object/],
    [['-o', 'yaml', 'deploy/rendered'], undefined, /-o: expected one of text, json, got "yaml"/],
  ];
  for (const [args, input, message] of cases) {
    const r = check(args, input);
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
    assert.match(r.stderr, message);
  }
  // No object at all (a helm template that failed in the pipe printed nothing): no success to report.
  writeFileSync(join(dir, 'empty.yaml'), '# nothing\n');
  for (const [args, input] of [
    [[join(dir, 'empty.yaml')], undefined],
    [['-'], ''],
    [['-o', 'json', '-'], '---\n'],
  ] as [string[], string | undefined][]) {
    const r = check(args, input);
    assert.equal([r.status, r.stdout], [2, ''], `${args.join(' ')}: ${r.stdout}${r.stderr}`);
    assert.match(
      r.stderr,
      /DG_CHECK_INPUT: .*: no Kubernetes object in the input; a helm template or kubectl kustomize that fails in a pipe prints nothing: run it alone to see its error/,
    );
  }
});

test.run();
