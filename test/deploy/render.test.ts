// Every kustomization in deploy/ renders with kubectl, and every object it
// renders is one the API server would accept (schema and unknown fields;
// support/manifests.unit.test.ts shows the check finds what it refuses).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { kustomizations, problems, render } from './support/manifests.ts';

const dirs = kustomizations();

for (const dir of dirs) {
  test(`${dir} renders, and every object validates against the Kubernetes schemas`, async () => {
    const objects = render(dir);
    assert.ok(objects.length > 0, 'renders nothing');
    const found = (await Promise.all(objects.map(problems))).flat();
    assert.equal(found, []);
  });
}

test.run();
