// The deploy/ tree has an example for each mode, and the validation of rendered
// objects (manifests.ts) finds what the API server would refuse: the check
// render.test.ts relies on, shown without kubectl.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { kustomizations, parseObjects, problems } from './manifests.ts';

test('deploy/ has the example operator and an example for each mode', () => {
  const dirs = kustomizations();
  for (const dir of ['deploy/examples/operator', 'deploy/examples/wrap', 'deploy/examples/native-sidecar', 'deploy/examples/sidecar']) {
    assert.ok(dirs.includes(dir), `${dir} missing from ${dirs.join(', ')}`);
  }
});

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
