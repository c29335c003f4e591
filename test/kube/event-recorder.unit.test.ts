// An Event's times on a clock the test moves, with an API the test answers:
// its name and timestamps are the clock's moment, and its write has 5 s from
// then in all (two attempts).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { CallOptions, KubeClient } from '../../src/kube/client.ts';
import { createEventRecorder } from '../../src/kube/event-recorder.ts';
import { RESOURCES } from '../../src/kube/objects.ts';
import { FakeClock } from '../support/fake-clock.ts';

const POD = { ...RESOURCES.pod, namespace: 'ops', name: 'op-0', uid: 'u1' };

function api() {
  const writes: { body: any; call: CallOptions }[] = [];
  const client = {
    create: async (_r: unknown, _namespace: string, body: unknown, call: CallOptions) => {
      writes.push({ body, call });
      return body;
    },
  } as unknown as KubeClient;
  return { client, writes };
}

test("an Event's name and times are the clock's moment; its write has 5 s from then, in two attempts", async () => {
  const clock = new FakeClock(Date.UTC(2026, 0, 1, 0, 0, 0, 250));
  const { client, writes } = api();
  const record = createEventRecorder({ client, instance: 'op-0', clock });
  await record(POD, 'Normal', 'Drained', 'the operator drained in 1.2s');
  await clock.advance(61_000);
  await record(POD, 'Warning', 'DrainTimeout', 'x');
  const at = [Date.UTC(2026, 0, 1, 0, 0, 0, 250), Date.UTC(2026, 0, 1, 0, 1, 1, 250)];
  assert.equal(
    writes.map((w) => [w.body.metadata.name, w.body.firstTimestamp, w.body.lastTimestamp]),
    [
      [`op-0.${(BigInt(at[0]!) * 1_000_000n).toString(16)}`, '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z'],
      [`op-0.${(BigInt(at[1]!) * 1_000_000n).toString(16)}`, '2026-01-01T00:01:01Z', '2026-01-01T00:01:01Z'],
    ],
  );
  assert.equal(
    writes.map((w) => w.call),
    at.map((t) => ({ deadline: t + 5000, retry: { maxAttempts: 2 } })),
  );
});

test.run();
