// Every kustomization in deploy/ renders with kubectl, and every object it
// renders is one the API server would accept (schema and unknown fields).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { kustomizations, parseObjects, problems, render } from './support/manifests.ts';

const dirs = kustomizations();

test('deploy/ has the example operator and an example for each mode', () => {
  for (const dir of ['deploy/examples/operator', 'deploy/examples/wrap', 'deploy/examples/native-sidecar', 'deploy/examples/sidecar']) {
    assert.ok(dirs.includes(dir), `${dir} missing from ${dirs.join(', ')}`);
  }
});

for (const dir of dirs) {
  test(`${dir} renders, and every object validates against the Kubernetes schemas`, async () => {
    const objects = render(dir);
    assert.ok(objects.length > 0, 'renders nothing');
    const found = (await Promise.all(objects.map(problems))).flat();
    assert.equal(found, []);
  });
}

test('the validation finds what the API server would refuse', async () => {
  const [broken] = parseObjects(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: broken}
spec:
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec:
      terminationGracePeriodSeconds: "60"
      containers:
        - name: manager
          image: x
          env: [{name: A, value: 60}]
          securityContext: {readOnlyRootFileSystem: true}
`);
  const found = (await problems(broken!)).join('\n');
  assert.match(found, /terminationGracePeriodSeconds must be integer/);
  assert.match(found, /unknown field spec\.template\.spec\.containers\[0\]\.securityContext\.readOnlyRootFileSystem/);
  const [noSuchKind] = parseObjects('apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n');
  assert.match((await problems(noSuchKind!)).join('\n'), /no schema for example\.com\/v1 Widget/);
});

test.run();
