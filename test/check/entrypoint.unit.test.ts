// What check tells of a wrap's COMMAND from the manifests alone
// (src/check/entrypoint.ts): no COMMAND, a shell script given to a program that
// is no shell, kubebuilder's /manager given another program's command line. And
// what it must not take for those: Kubernetes' own $(VAR) in command and args,
// expanded by the kubelet from the container's environment before anything
// runs ($$ its escape), and a /manager that takes a subcommand.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { checkEntrypoint } from '../../src/check/entrypoint.ts';
import type { Container } from '../../src/check/pod.ts';

const RUN = ['/drainguard/drainguard', 'run', '--'];
const fieldRef = (name: string, fieldPath: string) => ({ name, valueFrom: { fieldRef: { fieldPath } } });

const findings = (c: Container) => checkEntrypoint({ mode: 'wrap', supervisor: c, operator: c });
const codes = (command: string[] | undefined, args?: string[], more: Partial<Container> = {}) =>
  findings({ name: 'manager', command, args, ...more }).map((f) => f.code);

test('wrap COMMAND: what the manifests can show, and what they cannot', () => {
  const run = ['/drainguard/drainguard', 'run'];
  assert.equal(codes([...run]), ['wrap-command-missing']);
  assert.equal(codes([...run, '--'], ['--leader-elect']), ['wrap-command-missing']);
  assert.equal(codes([...run, '--', '/manager'], ['-c', 'exec /op']), ['wrap-entrypoint-unknown']);
  assert.equal(codes([...run, '--', '/manager'], ['--x', 'a\nb']), ['wrap-entrypoint-unknown']);
  assert.equal(codes([...run, '--', '/manager'], ['/ko-app/op']), ['wrap-entrypoint-unknown']);
  assert.equal(codes([...run, '--', '/bin/sh'], ['-c', 'exec /op && true']), []);
  assert.equal(codes([...run, '--stop-timeout', '5s', '--', '/op'], ['serve']), []);
  assert.equal(codes([...run, '--stop-timeout', '5s', '/manager'], ['--leader-elect']), []);
  // Not knowable without the image: a plain /manager whose image runs another program.
  assert.equal(codes([...run, '--', '/manager'], ['--leader-elect']), []);
  // The drainguard image's entrypoint: args alone.
  const image = { name: 'manager', image: 'ghcr.io/drainguard/drainguard:0.1.0', args: ['run', '--', '/op'] };
  assert.equal(checkEntrypoint({ mode: 'wrap', supervisor: image, operator: image }), []);
});

test("Kubernetes' $(VAR) of a variable the container has: expanded by the kubelet, no shell in it", () => {
  // fluxcd's controllers: the namespace from the downward API, in flags.
  const flux = {
    env: [
      fieldRef('RUNTIME_NAMESPACE', 'metadata.namespace'),
      { name: 'GOMAXPROCS', valueFrom: { resourceFieldRef: { containerName: 'manager', resource: 'limits.cpu' } } },
    ],
  } as Partial<Container>;
  const fluxArgs = [
    '--events-addr=http://notification-controller.$(RUNTIME_NAMESPACE).svc.cluster.local./',
    '--watch-all-namespaces=true',
    '--log-level=info',
    '--enable-leader-election',
  ];
  assert.equal(codes([...RUN, 'kustomize-controller'], fluxArgs, flux), []);
  // operator-sdk's: the namespace to watch.
  const sdk = { env: [fieldRef('POD_NAMESPACE', 'metadata.namespace')] };
  assert.equal(codes([...RUN, '/manager'], ['--leader-elect', '--watch-namespace=$(POD_NAMESPACE)'], sdk), []);
  // In the command too (a ConfigMap's command put there by kustomize), and a variable set from another.
  const chained = {
    env: [
      { name: 'BIN', value: '/opt/op/bin' },
      { name: 'OP', value: '$(BIN)/operator' },
    ],
  };
  assert.equal(codes([...RUN, '$(OP)'], ['--zap-log-level=$(LEVEL)'], { env: [...chained.env, { name: 'LEVEL', value: 'info' }] }), []);
  // From envFrom, whose names check cannot see, and the Service variables the kubelet adds to every container.
  const envFrom = { envFrom: [{ configMapRef: { name: 'op-config' } }] } as Partial<Container>;
  assert.equal(codes([...RUN, '/manager'], ['--watch-namespace=$(WATCH_NAMESPACE)'], envFrom), []);
  assert.equal(codes([...RUN, '/manager'], ['--kube-api=https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)']), []);
  // $$ is Kubernetes' escape: the program is given $(VAR) as it is written, on purpose.
  assert.equal(codes([...RUN, '/manager'], ['--name-template=$$(POD_NAME)-backup']), []);
});

test('a shell script after a program that is no shell is still one, $(VAR) or not', () => {
  const sdk = { env: [fieldRef('POD_NAMESPACE', 'metadata.namespace')] };
  const script = (args: string[], more: Partial<Container> = {}) => codes([...RUN, '/manager'], args, more);
  // Command substitution, also behind Kubernetes' escape, and beside a variable Kubernetes expands.
  assert.equal(script(['--namespace=$(cat /var/run/secrets/kubernetes.io/serviceaccount/namespace)']), ['wrap-entrypoint-unknown']);
  assert.equal(script(['--id=$$(hostname -s)']), ['wrap-entrypoint-unknown']);
  assert.equal(script(['--watch-namespace=$(POD_NAMESPACE)', 'exec /op && true'], sdk), ['wrap-entrypoint-unknown']);
  assert.equal(script(['--ns=$(POD_NAMESPACE); exec /op'], sdk), ['wrap-entrypoint-unknown']);
  // $(NAME) the container does not have: Kubernetes leaves it as it is, and only a shell would expand it.
  const undeclared = findings({ name: 'manager', command: [...RUN, '/manager'], args: ['--watch-namespace=$(POD_NAMESPACE)'] });
  assert.equal(
    undeclared.map((f) => f.code),
    ['wrap-entrypoint-unknown'],
  );
  assert.match(undeclared[0]!.message, /\$\(POD_NAMESPACE\), which the container does not set: Kubernetes passes it on as it is/);
  assert.match(undeclared[0]!.message, /if it is meant as Kubernetes' \$\(VAR\), add POD_NAMESPACE to the container's env/);
  // Once the container has it, the same argument is Kubernetes'.
  assert.equal(script(['--watch-namespace=$(POD_NAMESPACE)'], sdk), []);
});

test("/manager and a subcommand is a program's own command line; /manager and another program is not", () => {
  // CloudNativePG: the image's ENTRYPOINT is /manager, `controller` the operator (`instance`, `backup` run in its pods).
  const cnpg = [
    'controller',
    '--leader-elect',
    '--max-concurrent-reconciles=10',
    '--config-map-name=cnpg-controller-manager-config',
    '--webhook-port=9443',
  ];
  assert.equal(codes([...RUN, '/manager'], cnpg, { env: [fieldRef('OPERATOR_NAMESPACE', 'metadata.namespace')] }), []);
  assert.equal(codes([...RUN, '/manager'], ['start', '--zap-devel']), []);
  // The container's args were a whole command line (an image without ENTRYPOINT, or with an init in front).
  for (const args of [
    ['/ko-app/operator', '--leader-elect'],
    ['./bin/operator'],
    ['tini', '--', '/op'],
    ['/usr/bin/dumb-init', '/op'],
    ['sh', '/entrypoint.sh'],
    ['manager', '--leader-elect'],
  ]) {
    const found = findings({ name: 'manager', command: [...RUN, '/manager'], args });
    assert.equal(
      found.map((f) => f.code),
      ['wrap-entrypoint-unknown'],
      args.join(' '),
    );
    assert.ok(found[0]!.message.includes(`its first argument is ${JSON.stringify(args[0])}`), found[0]!.message);
  }
});

test.run();
