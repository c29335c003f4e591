// Discovery as predelete reads it, with an API the test answers: a group whose
// resources cannot be read (an aggregated API that is down, a CRD deleted
// between the list of groups and the read of its own) is left out with a
// warning; a type asked for in such a group fails as a failure (exit 1), not as
// a usage error; a server that does not answer at all ends the run.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { exitStatus } from '../../src/errors.ts';
import type { KubeClient } from '../../src/kube/client.ts';
import { KubeApiError, KubeUnreachableError } from '../../src/kube/errors.ts';
import { Discovery, parseResourceArgs } from '../../src/predelete/resources.ts';

const SERVER = 'https://fake';
const WIDGETS = { name: 'widgets', singularName: 'widget', namespaced: false, kind: 'Widget' };

/** /api/v1, /apis with two groups, and each group's resources, or the error `down` gives for a path. */
function client(down: Record<string, Error> = {}): KubeClient {
  const answers: Record<string, unknown> = {
    '/api/v1': { resources: [{ name: 'pods', singularName: 'pod', namespaced: true, kind: 'Pod' }] },
    '/apis': {
      groups: [
        { name: 'example.com', preferredVersion: { version: 'v1' }, versions: [{ version: 'v1' }] },
        { name: 'metrics.example.org', preferredVersion: { version: 'v1beta1' }, versions: [{ version: 'v1beta1' }] },
        // Gadgets are served in v1alpha1 alone, a version the group does not prefer.
        { name: 'gear.example.net', preferredVersion: { version: 'v1' }, versions: [{ version: 'v1' }, { version: 'v1alpha1' }] },
      ],
    },
    '/apis/example.com/v1': { resources: [WIDGETS] },
    '/apis/metrics.example.org/v1beta1': { resources: [{ name: 'nodemetrics', namespaced: false, kind: 'NodeMetrics' }] },
    '/apis/gear.example.net/v1': { resources: [{ name: 'cogs', singularName: 'cog', namespaced: true, kind: 'Cog' }] },
    '/apis/gear.example.net/v1alpha1': { resources: [{ name: 'sprockets', singularName: 'sprocket', namespaced: true, kind: 'Sprocket' }] },
  };
  return {
    server: SERVER,
    request: async (_method: string, path: string) => {
      if (down[path]) throw down[path];
      return answers[path];
    },
  } as unknown as KubeClient;
}

/** What `pending` rejects with; a test fails when it resolves. */
async function rejection(pending: Promise<unknown>): Promise<Error & { code?: string }> {
  try {
    await pending;
  } catch (err) {
    return err as Error & { code?: string };
  }
  assert.unreachable('resolved, expected a rejection');
  throw new Error('unreachable');
}

const unavailable = () =>
  new KubeApiError(
    'discovery of metrics.example.org/v1beta1',
    SERVER,
    503,
    'ServiceUnavailable',
    'the server is currently unable to handle the request',
  );

test('a group that answers 503 is left out with a warning; a type of another group resolves', async () => {
  const warned: string[] = [];
  const discovery = new Discovery(client({ '/apis/metrics.example.org/v1beta1': unavailable() }), (gv, error) =>
    warned.push(`${gv} ${error}`),
  );
  const target = await discovery.resolve(parseResourceArgs('widgets.example.com/w')[0]!);
  assert.equal([target.resource.group, target.resource.resource, target.name], ['example.com', 'widgets', 'w']);
  assert.equal(warned, ['metrics.example.org/v1beta1 503 ServiceUnavailable: the server is currently unable to handle the request']);
});

test('a type only an unread group could serve: DG_PREDELETE_DISCOVERY, exit 1, naming the group and its answer', async () => {
  const discovery = new Discovery(client({ '/apis/metrics.example.org/v1beta1': unavailable() }));
  const err = await rejection(discovery.resolve(parseResourceArgs('nodemetrics')[0]!));
  assert.equal([err.code, exitStatus(err)], ['DG_PREDELETE_DISCOVERY', 1]);
  assert.match(err.message, /no resource type "nodemetrics" in the groups it could read/);
  assert.match(err.message, /could not read metrics\.example\.org\/v1beta1 \(503 ServiceUnavailable: /);
});

test('a type the unread group cannot serve by its qualifier is still a usage error (exit 2)', async () => {
  const discovery = new Discovery(client({ '/apis/metrics.example.org/v1beta1': unavailable() }));
  const err = await rejection(discovery.resolve(parseResourceArgs('gadgets.example.com')[0]!));
  assert.equal([err.code, exitStatus(err)], ['DG_PREDELETE_RESOURCE', 2]);
  assert.match(err.message, /has no resource type "gadgets\.example\.com" \(is its CustomResourceDefinition installed\?\)/);
});

test('no answer at all from a group ends the run with that error', async () => {
  const refused = new KubeUnreachableError('discovery of example.com/v1', SERVER, 'ECONNREFUSED');
  const discovery = new Discovery(client({ '/apis/example.com/v1': refused }));
  assert.is(await rejection(discovery.resolve(parseResourceArgs('widgets.example.com')[0]!)), refused);
});

test('a bare kind resolves, and a type served only in a version its group does not prefer is found there', async () => {
  const discovery = new Discovery(client(), () => undefined);
  const widget = await discovery.resolve(parseResourceArgs('Widget/w')[0]!);
  assert.equal([widget.resource.group, widget.resource.resource], ['example.com', 'widgets']);
  const sprocket = await discovery.resolve(parseResourceArgs('sprockets/s')[0]!);
  assert.equal([sprocket.resource.group, sprocket.resource.version], ['gear.example.net', 'v1alpha1']);
});

test.run();
