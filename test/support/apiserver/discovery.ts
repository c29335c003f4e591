// Discovery and the other non-resource paths kubectl, helm and client-go
// read: /version, /api, /apis, the group and version lists (legacy
// discovery: clients that ask for the aggregated form fall back to it), and
// an OpenAPI v3 index whose PATCH operations declare the fieldValidation
// parameter, which is what kubectl's and helm's validation look up.

import { createHash } from 'node:crypto';
import { notFoundPath } from './errors.ts';
import type { ResourceType, ResourceTypes } from './resources.ts';

export const KUBE_VERSION = { major: '1', minor: '32', gitVersion: 'v1.32.6', gitCommit: 'stand-in', gitTreeState: 'clean', buildDate: '2025-06-17T00:00:00Z', goVersion: 'go1.23.10', compiler: 'gc', platform: 'linux/amd64' };

function groupEntry(name: string, versions: string[]) {
  return { name, versions: versions.map((v) => ({ groupVersion: `${name}/${v}`, version: v })), preferredVersion: { groupVersion: `${name}/${versions[0]}`, version: versions[0] } };
}

function resourceList(types: ResourceType[]): unknown[] {
  return types.flatMap((t) => [
    {
      name: t.resource,
      singularName: t.singular,
      namespaced: t.namespaced,
      kind: t.kind,
      verbs: [...t.verbs],
      ...(t.shortNames?.length && { shortNames: [...t.shortNames] }),
      ...(t.categories?.length && { categories: [...t.categories] }),
      ...(!t.virtual && { storageVersionHash: createHash('sha256').update(`${t.group}/${t.version}/${t.kind}`).digest('base64').slice(0, 11) }),
    },
    ...Object.entries(t.subresources).map(([name, s]) => ({
      name: `${t.resource}/${name}`,
      singularName: t.singular,
      namespaced: t.namespaced,
      ...(s.group !== undefined && { group: s.group, version: s.version }),
      kind: s.kind,
      verbs: [...s.verbs],
    })),
  ]);
}

/** The body of a discovery GET, or undefined when `path` is not a discovery path. */
export function discovery(types: ResourceTypes, path: string, port: number): unknown {
  const segs = path.split('/').filter(Boolean);
  if (path === '/version' || path === '/version/') return KUBE_VERSION;
  if (path === '/api' || path === '/api/') return { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: `127.0.0.1:${port}` }] };
  const groups = types.groups();
  if (path === '/apis' || path === '/apis/') {
    return { kind: 'APIGroupList', apiVersion: 'v1', groups: [...groups].filter(([g]) => g !== '' && servedTypes(types, g).length > 0).map(([g, versions]) => groupEntry(g, versions.filter((v) => servedTypes(types, g, v).length > 0))) };
  }
  if (segs[0] === 'apis' && segs.length === 2) {
    const versions = (groups.get(segs[1]!) ?? []).filter((v) => servedTypes(types, segs[1]!, v).length > 0);
    if (versions.length === 0) throw notFoundPath();
    return { kind: 'APIGroup', apiVersion: 'v1', ...groupEntry(segs[1]!, versions) };
  }
  const gv = segs[0] === 'api' && segs.length === 2 ? ['', segs[1]!] : segs[0] === 'apis' && segs.length === 3 ? [segs[1]!, segs[2]!] : undefined;
  if (gv) {
    const served = servedTypes(types, gv[0]!, gv[1]!);
    if (served.length === 0) throw notFoundPath();
    return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: gv[0] ? `${gv[0]}/${gv[1]}` : gv[1], resources: resourceList(served) };
  }
  return undefined;
}

function servedTypes(types: ResourceTypes, group: string, version?: string): ResourceType[] {
  return types.all().filter((t) => t.group === group && (version === undefined || t.version === version));
}

// ---- OpenAPI v3 ------------------------------------------------------------------

const gvPath = (group: string, version: string) => (group ? `apis/${group}/${version}` : `api/${version}`);

/** /openapi/v3 and /openapi/v3/<group-version>: undefined when `path` is neither. */
export function openApi(types: ResourceTypes, path: string): unknown {
  if (path === '/openapi/v3' || path === '/openapi/v3/') {
    const paths: Record<string, { serverRelativeURL: string }> = {};
    for (const [group, versions] of types.groups()) {
      for (const v of versions) {
        const doc = JSON.stringify(gvDocument(types, group, v));
        paths[gvPath(group, v)] = { serverRelativeURL: `/openapi/v3/${gvPath(group, v)}?hash=${createHash('sha512').update(doc).digest('hex').toUpperCase().slice(0, 128)}` };
      }
    }
    return { paths };
  }
  const m = /^\/openapi\/v3\/(api\/([^/]+)|apis\/([^/]+)\/([^/]+))$/.exec(path);
  if (!m) return undefined;
  const [group, version] = m[2] ? ['', m[2]] : [m[3]!, m[4]!];
  if (servedTypes(types, group, version).length === 0) throw notFoundPath();
  return gvDocument(types, group, version);
}

function gvDocument(types: ResourceTypes, group: string, version: string): unknown {
  const paths: Record<string, unknown> = {};
  const queryParam = (name: string) => ({ name, in: 'query', schema: { type: 'string', uniqueItems: true } });
  for (const t of servedTypes(types, group, version)) {
    if (t.virtual) continue;
    const base = `/${gvPath(t.group, t.version)}${t.namespaced ? '/namespaces/{namespace}' : ''}/${t.resource}/{name}`;
    const gvk = { group: t.group, version: t.version, kind: t.kind };
    paths[base] = {
      get: { operationId: `read${t.kind}`, 'x-kubernetes-action': 'get', 'x-kubernetes-group-version-kind': gvk, responses: { '200': { description: 'OK' } } },
      patch: {
        operationId: `patch${t.kind}`,
        parameters: [queryParam('dryRun'), queryParam('fieldManager'), queryParam('fieldValidation'), queryParam('force')],
        'x-kubernetes-action': 'patch',
        'x-kubernetes-group-version-kind': gvk,
        responses: { '200': { description: 'OK' } },
      },
    };
  }
  return { openapi: '3.0.0', info: { title: 'Kubernetes', version: 'v1.32.6' }, paths, components: { schemas: {} } };
}
