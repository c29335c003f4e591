// Which Leases are this pod's operator's, and how the release writes them
// (src/leader/release.ts): client-go's identity `<hostname>_<uuid>`, the
// kubelet's hostname rule, and MicroTime's six fractional digits.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { microTime } from '../../src/kube/objects.ts';
import { heldByPod, podHostname, released } from '../../src/leader/release.ts';

test("a pod's hostname is its name, cut to 63 characters without a trailing '-' or '.'", () => {
  assert.is(podHostname('op-7d9c8b6f5-x2x4q'), 'op-7d9c8b6f5-x2x4q');
  const long = `${'a'.repeat(62)}-bcd`;
  assert.is(podHostname(long), 'a'.repeat(62));
  assert.is(podHostname('a'.repeat(70)), 'a'.repeat(63));
});

test("only client-go's identity of a process in this pod holds it: the hostname and '_'", () => {
  assert.ok(heldByPod('op-0_6b0f5c52-0f43-4a40-9a9b-8f9f3a1c2d7e', 'op-0'));
  assert.not.ok(heldByPod('op-00_6b0f5c52', 'op-0'), 'another pod whose name begins the same');
  assert.not.ok(heldByPod('op-0', 'op-0'), "drainguard's own holder Lease (holderIdentity = the pod's name)");
  assert.not.ok(heldByPod('', 'op-0'));
  assert.not.ok(heldByPod(undefined, 'op-0'));
  assert.ok(heldByPod(`${'a'.repeat(63)}_x`, 'a'.repeat(70)), 'a long name, by its hostname');
});

test('released: empty holder, one second, both times now with six fractional digits, the rest kept', () => {
  const at = Date.UTC(2026, 0, 1, 0, 0, 0, 123);
  assert.is(microTime(at), '2026-01-01T00:00:00.123000Z');
  const lease = {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name: 'l', resourceVersion: '7' },
    spec: { holderIdentity: 'op-0_x', leaseDurationSeconds: 15, leaseTransitions: 4, acquireTime: 'a', renewTime: 'r' },
  };
  assert.equal(released(lease, at), {
    ...lease,
    spec: {
      holderIdentity: '',
      leaseDurationSeconds: 1,
      leaseTransitions: 4,
      acquireTime: '2026-01-01T00:00:00.123000Z',
      renewTime: '2026-01-01T00:00:00.123000Z',
    },
  });
});

test.run();
