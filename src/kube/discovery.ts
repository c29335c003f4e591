// Which version of an API group serves a resource, from discovery (readable
// by every authenticated user). The group's preferred version first, then the
// others in the order the server lists them: a group may serve a resource
// only in a version it does not prefer (External Secrets' PushSecret is
// v1alpha1 in a group whose preferred version is v1).

import type { CallOptions, KubeClient } from './client.ts';
import { isNotFound } from './errors.ts';
import type { ResourceRef } from './objects.ts';

interface ApiGroup {
  readonly preferredVersion?: { readonly version?: string };
  readonly versions?: readonly { readonly version: string }[];
}

interface ResourceList {
  readonly resources?: readonly { readonly name: string; readonly kind: string; readonly namespaced: boolean }[];
}

/** The group's versions, preferred first, each once. */
export function versionsOf(group: ApiGroup): string[] {
  const all = [group.preferredVersion?.version, ...(group.versions ?? []).map((v) => v.version)];
  return [...new Set(all.filter((v): v is string => Boolean(v)))];
}

/** The resource `plural` of `group` as the first version that serves it; undefined when none does or the group is gone (404). */
export async function resolveResource(
  client: KubeClient,
  group: string,
  plural: string,
  call: Pick<CallOptions, 'deadline' | 'signal' | 'retry'> = {},
): Promise<ResourceRef | undefined> {
  try {
    const served = await client.request<ApiGroup>('GET', `/apis/${group}`, { ...call, what: `discovery of ${group}` });
    for (const version of versionsOf(served)) {
      const list = await client.request<ResourceList>('GET', `/apis/${group}/${version}`, {
        ...call,
        what: `discovery of ${group}/${version}`,
      });
      const r = (list.resources ?? []).find((x) => x.name === plural);
      if (r) return { group, version, resource: plural, kind: r.kind, namespaced: r.namespaced };
    }
    return undefined;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}
