// The finding admission-policy-missing: a guard whose ServiceAccount no
// admission policy holds to the finalizers of what it guards. On the rendered
// wrap and hold examples, as they are and with the policy taken away or
// narrowed. Pure: the analysis of parsed objects.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { analyze } from '../../src/check/analyze.ts';
import { type KubeObject, rendered } from '../deploy/support/manifests.ts';

const codes = (objects: KubeObject[]) => analyze(objects).map((f) => `${f.severity} ${f.code}`);
const policyOf = (objects: KubeObject[]) => objects.find((o) => o.kind === 'ValidatingAdmissionPolicy')!;

test('the rendered examples, policy and all: no finding', () => {
  for (const mode of ['wrap', 'hold']) assert.equal(codes(rendered(mode)), [], mode);
});

test('without the policy, or with a binding that only warns: a warning with the fix', () => {
  const without = rendered('wrap').filter((o) => o.kind !== 'ValidatingAdmissionPolicy');
  assert.equal(codes(without), ['warning admission-policy-missing']);
  const f = analyze(without)[0]!;
  assert.match(f.message, /no ValidatingAdmissionPolicy holds ServiceAccount example-system\/example-operator/);
  assert.match(f.fix, /drainguard.admissionPolicy: true/);
  const warnOnly = rendered('wrap').map((o) =>
    o.kind === 'ValidatingAdmissionPolicyBinding' ? { ...o, spec: { ...o.spec, validationActions: ['Warn'] } } : o,
  );
  assert.equal(codes(warnOnly), ['warning admission-policy-missing']);
});

test('a policy for another ServiceAccount, or one that misses a guarded object or the held Deployment, is found', () => {
  const other = rendered('wrap').map((o) =>
    o.kind === 'ValidatingAdmissionPolicy'
      ? {
          ...o,
          spec: {
            ...o.spec,
            matchConditions: [
              { name: 'x', expression: "request.userInfo.username == 'system:serviceaccount:example-system:someone-else'" },
            ],
          },
        }
      : o,
  );
  assert.equal(codes(other), ['warning admission-policy-missing']);
  const narrowed = rendered('wrap');
  const policy = policyOf(narrowed);
  policy.spec.matchConstraints.resourceRules[0].resourceNames = policy.spec.matchConstraints.resourceRules[0].resourceNames.filter(
    (n: string) => n !== 'example-operator',
  );
  assert.match(analyze(narrowed)[0]!.message, /does not cover clusterrole\/example-operator/);
  const hold = rendered('hold');
  const holdPolicy = policyOf(hold);
  holdPolicy.spec.matchConstraints.resourceRules = holdPolicy.spec.matchConstraints.resourceRules.filter(
    (r: any) => !r.resources.includes('deployments'),
  );
  assert.match(analyze(hold)[0]!.message, /does not cover deployment\/example-operator/);
});

test.run();
